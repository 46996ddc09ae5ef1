package data

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Verify reports whether root/spec.Dir holds the complete data of a verified download: the
// VerifiedMarker for spec.ArchiveSHA256 and every data file with the size of the official
// split (spec.TrainSize, spec.TestSize). The error wraps ErrNotVerified and says what is
// missing and how to get it. For the Python layout (see DetectLayout) the marker of
// `cifarlab download --format python`, or else torchvision's per-file MD5 pins, verify it.
func Verify(root string, spec Spec) error {
	if err := checkSpec(spec); err != nil {
		return err
	}
	layout, in, _ := detectLayout(root, spec)
	switch {
	case spec.Layout() == LayoutPython:
		return verifyIn(root, spec, LayoutPython)
	case layout == LayoutPython:
		return verifyIn(root, in, LayoutPython)
	}
	return verifyIn(root, spec, LayoutBinary)
}

// verifyIn is Verify for a spec already checked and already in the given layout (the layout
// of its folder under root, as detectLayout found it).
func verifyIn(root string, spec Spec, layout Layout) error {
	if layout == LayoutPython {
		return verifyPython(root, spec)
	}
	dir := filepath.Join(root, spec.Dir)
	fix := fmt.Sprintf("run `cifarlab download --dataset %s --data %s`", spec.Name, root)
	data, err := os.ReadFile(filepath.Join(dir, VerifiedMarker))
	if err != nil {
		reason := "it has no verified download"
		if _, serr := os.Stat(filepath.Join(dir, SyntheticMarker)); serr == nil {
			reason = "it holds synthetic data, not the verified archive"
		}
		return fmt.Errorf("data: %s: %w: %s (%s missing): %s", dir, ErrNotVerified, reason, VerifiedMarker, fix)
	}
	info, err := parseVerifiedMarker(dir, data, spec, fix)
	if err != nil {
		return err
	}
	for name, want := range expectedFiles(spec) {
		path := filepath.Join(dir, name)
		fi, err := os.Lstat(path)
		if err != nil {
			return fmt.Errorf("data: %w: data file %s is missing: %s", ErrNotVerified, path, fix)
		}
		if !fi.Mode().IsRegular() || fi.Size() != want || info.Files[name] != want {
			return fmt.Errorf("data: %w: data file %s has %d bytes (verified download: %d, official: %d): %s",
				ErrNotVerified, path, fi.Size(), info.Files[name], want, fix)
		}
	}
	return nil
}

// parseVerifiedMarker reads the VerifiedMarker of dir (its contents data) and checks that it
// records spec's archive; fix says how to get verified data.
func parseVerifiedMarker(dir string, data []byte, spec Spec, fix string) (VerifiedInfo, error) {
	var info VerifiedInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return info, fmt.Errorf("data: %s: %w: unreadable %s (%v): %s", dir, ErrNotVerified, VerifiedMarker, err, fix)
	}
	if info.SHA256 != spec.ArchiveSHA256 {
		return info, fmt.Errorf("data: %s: %w: it was extracted from an archive with SHA-256 %s, want %s: %s",
			dir, ErrNotVerified, info.SHA256, spec.ArchiveSHA256, fix)
	}
	return info, nil
}

// expectedFileSize returns the size in bytes that the k-th of nFiles files of a split of
// splitSize records has in a complete download.
func expectedFileSize(spec Spec, splitSize, nFiles, k int) int64 {
	records := (k+1)*splitSize/nFiles - k*splitSize/nFiles
	return int64(records) * int64(spec.RecordBytes())
}

// expectedFiles maps each data file of spec (relative to spec.Dir) to its expected size.
func expectedFiles(spec Spec) map[string]int64 {
	files := make(map[string]int64, len(spec.TrainFiles)+len(spec.TestFiles))
	for k, name := range spec.TrainFiles {
		files[name] = expectedFileSize(spec, spec.TrainSize, len(spec.TrainFiles), k)
	}
	for k, name := range spec.TestFiles {
		files[name] = expectedFileSize(spec, spec.TestSize, len(spec.TestFiles), k)
	}
	return files
}

// pythonFiles returns the files of a Python-layout spec: its batches and its meta file
// (Spec.MetaFile).
func pythonFiles(spec Spec) []string {
	return append(append(append([]string(nil), spec.TrainFiles...), spec.TestFiles...), pythonLayouts[spec.Name].meta)
}

// verifyPython is Verify for the Python layout (spec in that layout). Data that Download
// installed has the VerifiedMarker: the archive's SHA-256 and every file's size must match.
// A folder torchvision downloaded has no marker: every file must then have the MD5 that
// torchvision pins (and checks itself).
func verifyPython(root string, spec Spec) error {
	dir := filepath.Join(root, spec.Dir)
	fix := fmt.Sprintf("run `cifarlab download --dataset %s --format python --data %s`", spec.Name, root)
	data, err := os.ReadFile(filepath.Join(dir, VerifiedMarker))
	if err != nil {
		return verifyTorchvision(dir, spec, fix)
	}
	info, err := parseVerifiedMarker(dir, data, spec, fix)
	if err != nil {
		return err
	}
	for _, name := range pythonFiles(spec) {
		path := filepath.Join(dir, name)
		fi, err := os.Lstat(path)
		if err != nil {
			return fmt.Errorf("data: %w: data file %s is missing: %s", ErrNotVerified, path, fix)
		}
		if want := info.Files[name]; !fi.Mode().IsRegular() || want <= 0 || fi.Size() != want {
			return fmt.Errorf("data: %w: data file %s has %d bytes (verified download: %d): %s",
				ErrNotVerified, path, fi.Size(), want, fix)
		}
	}
	return nil
}

// verifyTorchvision checks the files of a Python-layout folder against torchvision's MD5 pins.
func verifyTorchvision(dir string, spec Spec, fix string) error {
	pins := pythonLayouts[spec.Name].md5
	for _, name := range pythonFiles(spec) {
		path := filepath.Join(dir, name)
		sum, err := fileMD5(path)
		if err != nil {
			return fmt.Errorf("data: %w: %s: %v: %s", ErrNotVerified, path, err, fix)
		}
		if sum != pins[name] {
			return fmt.Errorf("data: %w: %s has MD5 %s, not the official file's %s (torchvision's pin), and %s has no %s: %s",
				ErrNotVerified, path, sum, pins[name], dir, VerifiedMarker, fix)
		}
	}
	return nil
}

// fileMD5 returns the hex MD5 of a regular file (the checksum torchvision pins; SHA-256
// protects the archives cifarlib downloads).
func fileMD5(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("not a regular file")
	}
	h := md5.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// subsetImages says how many images the binary-layout files of spec in dir hold against the
// official files, when a file's size differs from the official one (see State.Images); ""
// when every file has its official size (then only the official archive can tell).
func subsetImages(dir string, spec Spec) string {
	official := expectedFiles(spec)
	count := func(names []string) (n int64, differs bool) {
		for _, name := range names {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				differs = true
				continue
			}
			n += fi.Size() / int64(spec.RecordBytes())
			differs = differs || fi.Size() != official[name]
		}
		return n, differs
	}
	train, trainDiffers := count(spec.TrainFiles)
	test, testDiffers := count(spec.TestFiles)
	if !trainDiffers && !testDiffers {
		return ""
	}
	return fmt.Sprintf("%d training and %d test images; the official files hold %d and %d", train, test, spec.TrainSize, spec.TestSize)
}
