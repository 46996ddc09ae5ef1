package data

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// DirEnv is the environment variable that overrides DefaultDir.
const DirEnv = "CIFARLAB_DATA"

// VerifiedMarker is the file, inside spec.Dir, that Download writes after it verified the
// archive's SHA-256 and extracted it. It holds a VerifiedInfo as JSON.
const VerifiedMarker = "cifarlab-verified.json"

// VerifiedInfo is the content of the VerifiedMarker file.
type VerifiedInfo struct {
	// Archive is the archive's file name and SHA256 its verified checksum.
	Archive string `json:"archive"`
	SHA256  string `json:"sha256"`
	// URL is where it was downloaded from ("" for an archive that was already in place).
	URL string `json:"url,omitempty"`
	// Files maps each extracted data file (relative to spec.Dir) to its size in bytes.
	Files map[string]int64 `json:"files"`
}

// DefaultDir returns the folder for datasets: $CIFARLAB_DATA if set, else
// os.UserCacheDir()/cifarlab (e.g. ~/.cache/cifarlab), else os.TempDir()/cifarlab.
func DefaultDir() string {
	if dir := os.Getenv(DirEnv); dir != "" {
		return dir
	}
	if cache, err := os.UserCacheDir(); err == nil {
		return filepath.Join(cache, "cifarlab")
	}
	return filepath.Join(os.TempDir(), "cifarlab")
}

// SyntheticDir returns the folder where Prepare puts synthetic data for a data root, so that
// synthetic data never mixes with, or overwrites, real data.
func SyntheticDir(root string) string { return filepath.Join(root, "synthetic") }

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

// Verify reports whether root/spec.Dir holds the complete data of a verified download: the
// VerifiedMarker for spec.ArchiveSHA256 and every data file with the size of the official
// split (spec.TrainSize, spec.TestSize). The error wraps ErrNotVerified and says what is
// missing and how to get it. For the Python layout (see DetectLayout) the marker of
// `cifarlab download --format python`, or else torchvision's per-file MD5 pins, verify it.
func Verify(root string, spec Spec) error {
	if err := checkSpec(spec); err != nil {
		return err
	}
	if spec.Layout() == LayoutPython {
		return verifyPython(root, spec)
	}
	if layout, _ := DetectLayout(root, spec); layout == LayoutPython {
		return verifyPython(root, spec.InLayout(LayoutPython))
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

// Prepare makes data for spec available under root and says whether it is synthetic. If
// root holds real data (StateOf: either layout, verified or not; Verify only decides what a
// run records) it uses it: load it with LoadSplit(root, ...). Synthetic data written into root
// itself (`cifarlab synth --out`) is used as it is. Otherwise, when root has no data for spec
// at all, it synthesizes data with the given options into SyntheticDir(root), once: data
// already there with the same options is reused. Load it with LoadSplit(SyntheticDir(root), ...),
// or use PrepareRoot, which returns the folder to load from.
func Prepare(root string, spec Spec, synth SynthOptions) (synthetic bool, err error) {
	_, synthetic, err = PrepareRoot(root, spec, synth)
	return synthetic, err
}

// PrepareRoot is Prepare that also returns the folder to pass to LoadSplit: root for real
// data, SyntheticDir(root) for the synthetic stand-in.
func PrepareRoot(root string, spec Spec, synth SynthOptions) (dataRoot string, synthetic bool, err error) {
	st, err := PrepareState(root, spec, synth)
	return st.LoadRoot, st.Kind == KindSynthetic, err
}

// PrepareState is Prepare that returns the data's State (StateOf) once it is prepared: its
// LoadRoot is the folder to pass to LoadSplit and its String the line that says it.
func PrepareState(root string, spec Spec, synth SynthOptions) (State, error) {
	if err := checkSpec(spec); err != nil {
		return State{Dataset: spec.Name, Kind: KindNone, Root: root}, err
	}
	st := StateOf(root, spec)
	if st.Real() || st.Kind == KindSynthetic && st.LoadRoot == root {
		return st, nil
	}
	synthRoot := SyntheticDir(root)
	st = State{Dataset: spec.Name, Kind: KindSynthetic, Root: root, LoadRoot: synthRoot,
		Dir: filepath.Join(synthRoot, spec.Dir), Layout: LayoutBinary}
	synth = synth.WithDefaults()
	if info, err := ReadSynthInfo(synthRoot, spec); err == nil && info == (SynthInfo{
		Generator: synthGenerator, Dataset: spec.Name, Seed: synth.Seed,
		TrainSize: synth.TrainSize, TestSize: synth.TestSize, LabelNoise: synth.LabelNoise,
	}) && synthFilesPresent(synthRoot, spec, synth) {
		return st, nil
	}
	if err := Synthesize(synthRoot, spec, synth); err != nil {
		return st, err
	}
	return st, nil
}

// synthFilesPresent reports whether the files of a synthetic dataset have the expected sizes.
func synthFilesPresent(root string, spec Spec, synth SynthOptions) bool {
	s := spec
	s.TrainSize, s.TestSize = synth.TrainSize, synth.TestSize
	for name, want := range expectedFiles(s) {
		fi, err := os.Lstat(filepath.Join(root, spec.Dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != want {
			return false
		}
	}
	return true
}

// LoadPrepared calls PrepareRoot and loads both splits: the few lines a notebook needs.
func LoadPrepared(root string, spec Spec, synth SynthOptions) (train, test *Records, synthetic bool, err error) {
	dataRoot, synthetic, err := PrepareRoot(root, spec, synth)
	if err != nil {
		return nil, nil, synthetic, err
	}
	if train, err = LoadSplit(dataRoot, spec, SplitTrain); err != nil {
		return nil, nil, synthetic, err
	}
	if test, err = LoadSplit(dataRoot, spec, SplitTest); err != nil {
		return nil, nil, synthetic, err
	}
	return train, test, synthetic, nil
}
