// Package archive extracts tar archives as a security boundary: only the files a Contents
// names, directly inside its one folder, with their sizes; nothing absolute, no "..", no links
// or special files, no duplicates. Entries go to a staging folder first and are renamed into
// place only when the whole archive was read and checked, so a refused archive changes nothing.
// It is internal plumbing (stage 1, see internal/layers): the data package describes the CIFAR
// archives with it and reports its errors.
package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Sentinel errors: every refusal of an entry wraps ErrUnsafe, an archive that ends early or
// lacks a file ErrIncomplete.
var (
	ErrUnsafe     = errors.New("unsafe or unexpected archive entry")
	ErrIncomplete = errors.New("incomplete archive")
)

// Contents is what an archive may hold, and the checks around its extraction.
type Contents struct {
	// Name is the archive's file name and Official what it should be the archive of (for
	// messages: "the archive is not the official <Official> archive").
	Name, Official string
	// Dir is the one folder inside the archive; its directory entry is allowed.
	Dir string
	// Data are the data files inside Dir, each with its exact size, or with -max for a file of
	// at most max bytes (checked otherwise by Staged). Every one must be present.
	Data map[string]int64
	// Metadata are other files allowed inside Dir, of at most MaxMetadataBytes each.
	Metadata         map[string]bool
	MaxMetadataBytes int64
	// CheckData, when set, wraps the writer of a data file (entry: its name in the archive) to
	// check its bytes as they stream; an error it returns stops the extraction unchanged.
	CheckData func(entry string, w io.Writer) io.Writer
	// Staged, when set, runs after the whole archive was read into the staging folder, before
	// anything is installed; an error stops the extraction.
	Staged func(staging string) error
	// Installing, when set, runs on root/Dir right before the files are renamed into it.
	Installing func(dir string) error
}

// Extract extracts r into root/c.Dir as c allows, and returns the data files and their sizes.
// On error nothing in root/c.Dir changes.
func Extract(r io.Reader, root string, c Contents) (files map[string]int64, err error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("cifarlib: %w", err)
	}
	staging, err := os.MkdirTemp(root, ".cifarlab-extract-*")
	if err != nil {
		return nil, fmt.Errorf("cifarlib: %w", err)
	}
	defer func() { _ = os.RemoveAll(staging) }()
	seen, files, err := c.stage(r, staging)
	if err != nil {
		return nil, err
	}
	if err := c.install(root, staging, seen); err != nil {
		return nil, err
	}
	return files, nil
}

// stage extracts the archive's entries, each checked (checkEntry), into the folder staging. It
// returns the files extracted, by name, and the data files' sizes; every data file of c must be
// there.
func (c *Contents) stage(r io.Reader, staging string) (seen map[string]bool, files map[string]int64, err error) {
	seen, files = map[string]bool{}, map[string]int64{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("cifarlib: reading %s: %w: %v", c.Name, ErrIncomplete, err)
		}
		base, isData, err := c.checkEntry(hdr)
		if err != nil {
			return nil, nil, err
		}
		if base == "" { // the Dir directory entry, or a pax global header
			continue
		}
		if seen[base] {
			return nil, nil, c.unsafe(hdr.Name, "appears twice")
		}
		seen[base] = true
		if err := c.extractEntry(tr, hdr, filepath.Join(staging, base), isData); err != nil {
			return nil, nil, err
		}
		if isData {
			files[base] = hdr.Size
		}
	}
	for name := range c.Data {
		if !seen[name] {
			return nil, nil, fmt.Errorf("cifarlib: %s: %w: it has no %s/%s", c.Name, ErrIncomplete, c.Dir, name)
		}
	}
	return seen, files, nil
}

// install moves the files staged (seen) into root/c.Dir, each synced first, after the Staged and
// Installing hooks.
func (c *Contents) install(root, staging string, seen map[string]bool) error {
	if c.Staged != nil {
		if err := c.Staged(staging); err != nil {
			return err
		}
	}
	dir := filepath.Join(root, c.Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cifarlib: %w", err)
	}
	if c.Installing != nil {
		if err := c.Installing(dir); err != nil {
			return err
		}
	}
	for base := range seen {
		if err := syncFile(filepath.Join(staging, base)); err != nil {
			return err
		}
	}
	for base := range seen {
		if err := os.Rename(filepath.Join(staging, base), filepath.Join(dir, base)); err != nil {
			return fmt.Errorf("cifarlib: installing %s: %w", base, err)
		}
	}
	return nil
}

// unsafe builds the error for a refused archive entry.
func (c *Contents) unsafe(name, why string) error {
	return fmt.Errorf("cifarlib: %s: %w: entry %q %s; the archive is not the official %s archive: delete it and download again",
		c.Name, ErrUnsafe, name, why, c.Official)
}

// checkEntry validates one tar header. It returns the file name to extract inside c.Dir ("" for
// entries to skip) and whether it is a data file.
func (c *Contents) checkEntry(hdr *tar.Header) (base string, isData bool, err error) {
	name := hdr.Name
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return "", false, nil
	}
	if name == "" || strings.ContainsAny(name, "\x00\\:") {
		return "", false, c.unsafe(name, "has an empty name or a NUL, backslash or colon in it")
	}
	if strings.HasPrefix(name, "/") || filepath.IsAbs(name) {
		return "", false, c.unsafe(name, "has an absolute path")
	}
	for _, elem := range strings.Split(name, "/") {
		if elem == ".." {
			return "", false, c.unsafe(name, "contains \"..\"")
		}
	}
	clean := path.Clean(name)
	switch hdr.Typeflag {
	case tar.TypeDir:
		if clean != c.Dir {
			return "", false, c.unsafe(name, "is an unexpected directory (only "+c.Dir+"/ is expected)")
		}
		return "", false, nil
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old archives use TypeRegA
	case tar.TypeSymlink, tar.TypeLink:
		return "", false, c.unsafe(name, fmt.Sprintf("is a link (to %q); links are not allowed", hdr.Linkname))
	default:
		return "", false, c.unsafe(name, fmt.Sprintf("has type %q; only regular files are allowed", hdr.Typeflag))
	}
	dir, base := path.Split(clean)
	if dir != c.Dir+"/" {
		return "", false, c.unsafe(name, "is outside "+c.Dir+"/")
	}
	if want, ok := c.Data[base]; ok {
		if want < 0 { // at most -want bytes, checked by Staged before install
			if hdr.Size < 1 || hdr.Size > -want {
				return "", false, c.unsafe(name, fmt.Sprintf("has %d bytes, but the %s file %s has at most %d", hdr.Size, c.Official, base, -want))
			}
			return base, true, nil
		}
		if hdr.Size != want {
			return "", false, c.unsafe(name, fmt.Sprintf("has %d bytes, but the %s data file %s has %d", hdr.Size, c.Official, base, want))
		}
		return base, true, nil
	}
	if c.Metadata[base] {
		if hdr.Size < 0 || hdr.Size > c.MaxMetadataBytes {
			return "", false, c.unsafe(name, fmt.Sprintf("has %d bytes, more than the %d allowed for a metadata file", hdr.Size, c.MaxMetadataBytes))
		}
		return base, false, nil
	}
	return "", false, c.unsafe(name, "is not a file of the "+c.Official+" archive")
}

// extractEntry copies the current entry (exactly hdr.Size bytes) to a new file at dst, through
// c.CheckData for a data file. Files are synced to disk only once the whole archive was accepted.
func (c *Contents) extractEntry(tr io.Reader, hdr *tar.Header, dst string, isData bool) (err error) {
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("cifarlib: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("cifarlib: %w", cerr)
		}
	}()
	in, out := &recorder{r: tr}, &recorder{w: f}
	var w io.Writer = out
	if isData && c.CheckData != nil {
		w = c.CheckData(hdr.Name, out)
	}
	n, err := io.CopyN(w, in, hdr.Size)
	if err != nil {
		if in.err == nil && out.err == nil { // the check refused the bytes
			return err
		}
		return fmt.Errorf("cifarlib: %s: %w: entry %q ends after %d of %d bytes: %v",
			c.Name, ErrIncomplete, hdr.Name, n, hdr.Size, err)
	}
	return nil
}

// recorder passes reads or writes through and keeps their first error (a read's io.EOF, which
// the tar reader returns with an entry's last bytes, is no error).
type recorder struct {
	r   io.Reader
	w   io.Writer
	err error
}

// Read implements io.Reader.
func (c *recorder) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// Write implements io.Writer.
func (c *recorder) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
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
