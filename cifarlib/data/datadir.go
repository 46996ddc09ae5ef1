package data

import (
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
		return State{Dataset: spec.Name, Kind: KindNone, Root: root, spec: spec}, err
	}
	st := StateOf(root, spec)
	if st.Real() || st.Kind == KindSynthetic && st.LoadRoot == root {
		return st, nil
	}
	if st.Itself != nil { // not a folder to synthesize into: the data is one level up
		return st, st.Itself
	}
	synthRoot := SyntheticDir(root)
	st = State{Dataset: spec.Name, Kind: KindSynthetic, Root: root, LoadRoot: synthRoot,
		Dir: filepath.Join(synthRoot, spec.Dir), Layout: LayoutBinary, spec: spec}
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
