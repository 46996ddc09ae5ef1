package data

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxMetadataBytes bounds the small text files (label names, readme) the archives carry.
const maxMetadataBytes = 1 << 20

// archiveMetadataFiles are the non-data files of the official archives, extracted as they are.
var archiveMetadataFiles = map[string]bool{
	"batches.meta.txt":       true, // CIFAR-10 label names
	"readme.html":            true, // CIFAR-10
	"coarse_label_names.txt": true, // CIFAR-100
	"fine_label_names.txt":   true, // CIFAR-100
	"file.txt~":              true, // CIFAR-100, python layout
}

// extractTarGz extracts a gzip-compressed CIFAR archive into root/spec.Dir; see extractTar.
func extractTarGz(r io.Reader, root string, spec Spec) (map[string]int64, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("cifarlib: %s is not a gzip archive: %w", spec.ArchiveName, err)
	}
	// Before anything is installed, read to the end so that gzip checks its CRC and length trailer.
	return extractTarThen(zr, root, spec, func() error {
		if _, err := io.Copy(io.Discard, zr); err != nil {
			return fmt.Errorf("cifarlib: %s: %w: %v", spec.ArchiveName, ErrIncompleteArchive, err)
		}
		if err := zr.Close(); err != nil {
			return fmt.Errorf("cifarlib: %s: %w: %v", spec.ArchiveName, ErrIncompleteArchive, err)
		}
		return nil
	})
}

// extractTar extracts a CIFAR tar archive into root/spec.Dir. It is a security boundary: it
// accepts only the spec's data files (with exactly their expected sizes, and valid label
// bytes) and the known metadata files, all directly inside spec.Dir, plus the spec.Dir
// directory entry itself. Anything else (absolute paths, "..", links, devices, other names,
// wrong sizes, duplicates) aborts the extraction with an error wrapping ErrUnsafeArchive.
// Entries go to a staging folder inside root first; only when the whole archive was read and
// every data file is present are they renamed into root/spec.Dir. On error nothing in
// root/spec.Dir changes. It returns the data files and their sizes. For a spec in the
// Python layout (Spec.InLayout) the pickles' sizes are bounded instead, and every pickle is
// decoded (readPickle, readPickleMetaFile) in the staging folder, with its split's record count,
// before anything is installed.
func extractTar(r io.Reader, root string, spec Spec) (files map[string]int64, err error) {
	return extractTarThen(r, root, spec, nil)
}

// extractTarThen is extractTar with a check run after the archive was read and before
// anything is installed (nil: none).
func extractTarThen(r io.Reader, root string, spec Spec, check func() error) (files map[string]int64, err error) {
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("cifarlib: %w", err)
	}
	staging, err := os.MkdirTemp(root, ".cifarlab-extract-*")
	if err != nil {
		return nil, fmt.Errorf("cifarlib: %w", err)
	}
	defer func() { _ = os.RemoveAll(staging) }()

	expected := expectedFiles(spec)
	python := spec.Layout() == LayoutPython
	if python {
		expected = pythonArchiveFiles(spec)
	}
	seen := map[string]bool{}
	files = map[string]int64{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("cifarlib: reading %s: %w: %v", spec.ArchiveName, ErrIncompleteArchive, err)
		}
		base, isData, err := checkEntry(hdr, spec, expected)
		if err != nil {
			return nil, err
		}
		if base == "" { // the spec.Dir directory entry, or a pax global header
			continue
		}
		if seen[base] {
			return nil, unsafeEntry(spec, hdr.Name, "appears twice")
		}
		seen[base] = true
		if err := extractEntry(tr, hdr, filepath.Join(staging, base), spec, isData); err != nil {
			return nil, err
		}
		if isData {
			files[base] = hdr.Size
		}
	}
	for name := range expected {
		if !seen[name] {
			return nil, fmt.Errorf("cifarlib: %s: %w: it has no %s/%s", spec.ArchiveName, ErrIncompleteArchive, spec.Dir, name)
		}
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, err
		}
	}
	if python {
		if err := checkPythonStaging(staging, spec); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(root, spec.Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cifarlib: %w", err)
	}
	// The data is about to change: it is not verified any more until the caller says so.
	if err := os.Remove(filepath.Join(dir, VerifiedMarker)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cifarlib: %w", err)
	}
	for base := range seen {
		if err := syncFile(filepath.Join(staging, base)); err != nil {
			return nil, err
		}
	}
	for base := range seen {
		if err := os.Rename(filepath.Join(staging, base), filepath.Join(dir, base)); err != nil {
			return nil, fmt.Errorf("cifarlib: installing %s: %w", base, err)
		}
	}
	return files, nil
}

// unsafeEntry builds the error for a refused archive entry.
func unsafeEntry(spec Spec, name, why string) error {
	return fmt.Errorf("cifarlib: %s: %w: entry %q %s; the archive is not the official %s archive: delete it and download again",
		spec.ArchiveName, ErrUnsafeArchive, name, why, spec.Name)
}

// checkEntry validates one tar header. It returns the file name to extract inside spec.Dir
// ("" for entries to skip) and whether it is a data file.
func checkEntry(hdr *tar.Header, spec Spec, expected map[string]int64) (base string, isData bool, err error) {
	name := hdr.Name
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return "", false, nil
	}
	if name == "" || strings.ContainsAny(name, "\x00\\:") {
		return "", false, unsafeEntry(spec, name, "has an empty name or a NUL, backslash or colon in it")
	}
	if strings.HasPrefix(name, "/") || filepath.IsAbs(name) {
		return "", false, unsafeEntry(spec, name, "has an absolute path")
	}
	for _, elem := range strings.Split(name, "/") {
		if elem == ".." {
			return "", false, unsafeEntry(spec, name, "contains \"..\"")
		}
	}
	clean := path.Clean(name)
	switch hdr.Typeflag {
	case tar.TypeDir:
		if clean != spec.Dir {
			return "", false, unsafeEntry(spec, name, "is an unexpected directory (only "+spec.Dir+"/ is expected)")
		}
		return "", false, nil
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old archives use TypeRegA
	case tar.TypeSymlink, tar.TypeLink:
		return "", false, unsafeEntry(spec, name, fmt.Sprintf("is a link (to %q); links are not allowed", hdr.Linkname))
	default:
		return "", false, unsafeEntry(spec, name, fmt.Sprintf("has type %q; only regular files are allowed", hdr.Typeflag))
	}
	dir, base := path.Split(clean)
	if dir != spec.Dir+"/" {
		return "", false, unsafeEntry(spec, name, "is outside "+spec.Dir+"/")
	}
	if want, ok := expected[base]; ok {
		if want < 0 { // python layout: at most -want bytes, checked by decoding before install
			if hdr.Size < 1 || hdr.Size > -want {
				return "", false, unsafeEntry(spec, name, fmt.Sprintf("has %d bytes, but the %s file %s has at most %d", hdr.Size, spec.Name, base, -want))
			}
			return base, true, nil
		}
		if hdr.Size != want {
			return "", false, unsafeEntry(spec, name, fmt.Sprintf("has %d bytes, but the %s data file %s has %d", hdr.Size, spec.Name, base, want))
		}
		return base, true, nil
	}
	if archiveMetadataFiles[base] {
		if hdr.Size < 0 || hdr.Size > maxMetadataBytes {
			return "", false, unsafeEntry(spec, name, fmt.Sprintf("has %d bytes, more than the %d allowed for a metadata file", hdr.Size, maxMetadataBytes))
		}
		return base, false, nil
	}
	return "", false, unsafeEntry(spec, name, "is not a file of the "+spec.Name+" archive")
}

// extractEntry copies the current entry (exactly hdr.Size bytes) to a new file at dst. Data
// files have their label bytes checked as they stream through. Files are synced to disk only
// once the whole archive was accepted.
func extractEntry(tr io.Reader, hdr *tar.Header, dst string, spec Spec, isData bool) (err error) {
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("cifarlib: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("cifarlib: %w", cerr)
		}
	}()
	var w io.Writer = f
	if isData && spec.Layout() == LayoutBinary {
		w = &labelChecker{w: f, spec: spec, source: spec.ArchiveName + ":" + hdr.Name}
	}
	n, err := io.CopyN(w, tr, hdr.Size)
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) {
			return err
		}
		return fmt.Errorf("cifarlib: %s: %w: entry %q ends after %d of %d bytes: %v",
			spec.ArchiveName, ErrIncompleteArchive, hdr.Name, n, hdr.Size, err)
	}
	return nil
}

// syncFile flushes a file to disk before it is renamed into place.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cifarlib: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("cifarlib: syncing %s: %w", path, err)
	}
	return nil
}

// labelChecker passes a record stream through to w and checks every label byte on the way.
type labelChecker struct {
	w      io.Writer
	spec   Spec
	source string
	pos    int64 // bytes seen so far
}

// Write implements io.Writer.
func (c *labelChecker) Write(p []byte) (int, error) {
	rb := int64(c.spec.RecordBytes())
	start, end := c.pos, c.pos+int64(len(p))
	for rec := start - start%rb; rec < end; rec += rb {
		for j := range int64(c.spec.LabelBytes) {
			off := rec + j
			if off < start || off >= end || int(p[off-start]) < c.spec.MaxLabels[j] {
				continue
			}
			return 0, checkLabels(c.spec, c.source, padLabel(c.spec, int(j), p[off-start]), int(rec/rb), rec)
		}
	}
	n, err := c.w.Write(p)
	c.pos += int64(n)
	return n, err
}

// padLabel returns label bytes that are valid except byte j, which is b (to reuse checkLabels).
func padLabel(spec Spec, j int, b byte) []byte {
	label := make([]byte, spec.LabelBytes)
	label[j] = b
	return label
}
