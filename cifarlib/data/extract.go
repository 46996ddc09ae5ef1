package data

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/internal/archive"
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
		return nil, fmt.Errorf("data: %s is not a gzip archive: %w", spec.ArchiveName, err)
	}
	// Before anything is installed, read to the end so that gzip checks its CRC and length trailer.
	return extractTarThen(zr, root, spec, func() error {
		if _, err := io.Copy(io.Discard, zr); err != nil {
			return fmt.Errorf("data: %s: %w: %v", spec.ArchiveName, ErrIncompleteArchive, err)
		}
		if err := zr.Close(); err != nil {
			return fmt.Errorf("data: %s: %w: %v", spec.ArchiveName, ErrIncompleteArchive, err)
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
// anything is installed (nil: none). The tar safety rules are internal/archive's; the CIFAR
// parts (which files, their sizes, their label bytes, the pickles) are the spec's.
func extractTarThen(r io.Reader, root string, spec Spec, check func() error) (files map[string]int64, err error) {
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	expected := expectedFiles(spec)
	python := spec.Layout() == LayoutPython
	if python {
		expected = pythonArchiveFiles(spec)
	}
	contents := archive.Contents{Name: spec.ArchiveName, Official: spec.Name, Dir: spec.Dir, Data: expected,
		Metadata: archiveMetadataFiles, MaxMetadataBytes: maxMetadataBytes,
		Staged: func(staging string) error {
			if check != nil {
				if err := check(); err != nil {
					return err
				}
			}
			if python {
				return checkPythonStaging(staging, spec)
			}
			return nil
		},
		// The data is about to change: it is not verified any more until the caller says so.
		Installing: func(dir string) error {
			if err := os.Remove(filepath.Join(dir, VerifiedMarker)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("data: %w", err)
			}
			return nil
		},
	}
	if !python {
		contents.CheckData = func(entry string, w io.Writer) io.Writer {
			return &labelChecker{w: w, spec: spec, source: spec.ArchiveName + ":" + entry}
		}
	}
	return archive.Extract(r, root, contents)
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
