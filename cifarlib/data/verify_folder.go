package data

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// ErrNotOfficial is wrapped by VerifyFolder's errors when the files are known to differ from
// the official ones (another size, MD5 or content than the official file): real data, perhaps,
// but a subset, a conversion or a damaged copy, which no checksum can vouch for.
var ErrNotOfficial = errors.New("not the official files")

// VerifyFolder checks the data of spec in root against the official checksums, offline, and
// on success writes the VerifiedMarker atomically, so that StateOf then says KindVerified. It
// returns what it checked, in words. What cifarlib pins:
//
//   - every layout: the SHA-256 of the official archive (Spec.ArchiveSHA256). Given that
//     archive (archivePath, or else root/<archive name> when it is there), VerifyFolder checks
//     its SHA-256 and compares each data file of the folder with the archive's copy, byte for
//     byte (by SHA-256); nothing is extracted.
//   - the python layout: torchvision's MD5 of every file, which Verify checks without an archive
//     (such a folder is verified without a marker; none is written).
//   - the binary layout: no per-file checksums (the official site publishes only the archive's).
//     Without the archive, VerifyFolder can only compare the files' sizes with the official
//     ones: a difference proves the files are not the official ones (ErrNotOfficial); equal
//     sizes prove nothing, and the error (ErrNotVerified) says to pass the archive.
//
// The errors wrap ErrNotVerified, ErrNotOfficial or ErrChecksum and say why and what to do.
func VerifyFolder(root string, spec Spec, archivePath string) (string, error) {
	st := StateOf(root, spec)
	switch st.Kind {
	case KindNone:
		return "", fmt.Errorf("data: %s: %w: %s", root, ErrNotVerified, st)
	case KindSynthetic:
		return "", fmt.Errorf("data: %s: %w: it holds synthetic data, nothing to verify: %s", st.Dir, ErrNotVerified, st)
	}
	ls := spec
	if spec.Layout() != st.Layout {
		ls = spec.InLayout(st.Layout)
	}
	if archivePath == "" {
		if fi, err := os.Stat(filepath.Join(root, ls.ArchiveName)); err == nil && fi.Mode().IsRegular() {
			archivePath = filepath.Join(root, ls.ArchiveName)
		}
	}
	if archivePath != "" {
		return verifyAgainstArchive(root, ls, archivePath)
	}
	if st.Kind == KindVerified {
		if st.Layout == LayoutPython {
			return fmt.Sprintf("every file of %s has the MD5 torchvision pins for the official files", st.Dir), nil
		}
		return fmt.Sprintf("%s holds the record of a verified download (%s) and every data file has its official size", st.Dir, VerifiedMarker), nil
	}
	if st.Layout == LayoutPython {
		return "", fmt.Errorf("data: %w: %w", ErrNotOfficial, st.NotVerified)
	}
	fix := fmt.Sprintf("to verify them offline, pass the official archive: cifarlab verify --data %s --dataset %s --archive PATH/%s (SHA-256 %s)",
		root, spec.Name, ls.ArchiveName, ls.ArchiveSHA256)
	official := fmt.Sprintf("the lab uses them as real, unverified data; for the official files run `cifarlab download --dataset %s --data DIR`", spec.Name)
	for _, name := range sortedNames(expectedFiles(ls)) {
		want := expectedFiles(ls)[name]
		p := filepath.Join(st.Dir, name)
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			return "", fmt.Errorf("data: %w: %s is missing (the official %s has %s): %s", ErrNotOfficial, p, name, images(ls, want), official)
		case fi.Size() != want:
			return "", fmt.Errorf("data: %w: %s has %s, the official file %s (a subset or a conversion, not the official archive's files): %s",
				ErrNotOfficial, p, images(ls, fi.Size()), images(ls, want), official)
		}
	}
	return "", fmt.Errorf("data: %s: %w: every data file has its official size, but cifarlib pins no checksum of the binary layout's files, "+
		"only of the archive %s: %s", st.Dir, ErrNotVerified, ls.ArchiveName, fix)
}

// images says a file size in bytes and in images of spec.
func images(spec Spec, size int64) string {
	if size%int64(spec.RecordBytes()) != 0 {
		return fmt.Sprintf("%d bytes", size)
	}
	return fmt.Sprintf("%d bytes (%d images)", size, size/int64(spec.RecordBytes()))
}

// sortedNames returns the keys of files, sorted.
func sortedNames(files map[string]int64) []string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// verifyAgainstArchive checks the archive's SHA-256 against spec's pin, then compares every
// data file of root/spec.Dir with the archive's copy, and writes the VerifiedMarker.
func verifyAgainstArchive(root string, spec Spec, archivePath string) (string, error) {
	sum, err := fileSHA256(archivePath)
	if err != nil {
		return "", fmt.Errorf("data: reading the archive: %w", err)
	}
	if sum != spec.ArchiveSHA256 {
		return "", fmt.Errorf("data: %s: %w: it has SHA-256 %s, the official %s has %s: pass the official archive, as `cifarlab download` fetches it",
			archivePath, ErrChecksum, sum, spec.ArchiveName, spec.ArchiveSHA256)
	}
	names := spec.TrainFiles
	names = append(append([]string(nil), names...), spec.TestFiles...)
	if spec.Layout() == LayoutPython {
		names = pythonFiles(spec)
	}
	official, err := archiveSHA256s(archivePath, spec.Dir, names)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, spec.Dir)
	files := make(map[string]int64, len(names))
	for _, name := range names {
		p := filepath.Join(dir, name)
		want, ok := official[name]
		if !ok {
			return "", fmt.Errorf("data: %s: %w: it has no %s/%s", archivePath, ErrIncompleteArchive, spec.Dir, name)
		}
		got, err := fileSHA256(p)
		if err != nil {
			return "", fmt.Errorf("data: %w: %s: %v", ErrNotOfficial, p, err)
		}
		if got != want {
			return "", fmt.Errorf("data: %w: %s differs from the official archive's copy (SHA-256 %s, official %s): "+
				"to replace the folder with the official files, run `cifarlab download --dataset %s --data %s`, which extracts the archive placed at %s",
				ErrNotOfficial, p, got, want, spec.Name, root, filepath.Join(root, spec.ArchiveName))
		}
		fi, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("data: %w", err)
		}
		files[name] = fi.Size()
	}
	info := VerifiedInfo{Archive: spec.ArchiveName, SHA256: spec.ArchiveSHA256, Files: files}
	if err := writeJSONAtomic(filepath.Join(dir, VerifiedMarker), info); err != nil {
		return "", fmt.Errorf("data: the files are the official ones, but the record of it cannot be written (%w): "+
			"make %s writable and verify again, or later runs say \"real, unverified\"", err, dir)
	}
	if err := Verify(root, spec); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s has the official SHA-256 and each of the %d files in %s is identical to its copy in it; recorded in %s",
		archivePath, len(names), dir, filepath.Join(dir, VerifiedMarker)), nil
}

// archiveSHA256s returns the SHA-256 of the members dir/name of a gzip-compressed tar archive,
// for the given names; it reads the archive once and writes nothing.
func archiveSHA256s(archivePath, dir string, names []string) (map[string]string, error) {
	f, err := os.Open(archivePath)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("data: %s is not a gzip archive: %w", archivePath, err)
	}
	wanted := make(map[string]bool, len(names))
	for _, name := range names {
		wanted[name] = true
	}
	sums := make(map[string]string, len(names))
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return sums, nil
		}
		if err != nil {
			return nil, fmt.Errorf("data: %s: %w: %v", archivePath, ErrIncompleteArchive, err)
		}
		name := strings.TrimPrefix(path.Clean(hdr.Name), "./")
		base := path.Base(name)
		if hdr.Typeflag != tar.TypeReg || path.Dir(name) != dir || !wanted[base] {
			continue
		}
		h := sha256.New()
		if _, err := io.Copy(h, tr); err != nil {
			return nil, fmt.Errorf("data: %s: %w: %v", archivePath, ErrIncompleteArchive, err)
		}
		sums[base] = hex.EncodeToString(h.Sum(nil))
	}
}
