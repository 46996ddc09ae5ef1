package data

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The kinds of data a run can be trained on (Provenance.Kind).
const (
	// KindSynthetic is cifarlib's synthetic stand-in (Synthesize, SynthesizeRecords).
	KindSynthetic = "synthetic"
	// KindVerified is real data of a verified download (Verify accepts its folder).
	KindVerified = "real, verified"
	// KindUnverified is real-looking data Verify does not vouch for: copied or converted files,
	// or a subset.
	KindUnverified = "real, unverified"
	// KindInMemory is records a program built, whose origin cifarlib cannot tell.
	KindInMemory = "in memory"
)

// Provenance says what a run was trained on: the dataset, whether its records are synthetic or
// real (verified or not), the layout and folder of their files, and the images in each split.
// A run records it (run.json, the runs table, the summary, TensorBoard), so that a synthetic
// run is never compared with a real one by mistake.
type Provenance struct {
	// Dataset is the Spec's ID, e.g. "cifar10" or "cifar100-coarse".
	Dataset string `json:"dataset"`
	// Kind is KindSynthetic, KindVerified, KindUnverified or KindInMemory.
	Kind string `json:"kind"`
	// Layout is the layout of the files ("binary" or "python"); "" for records in memory.
	Layout string `json:"layout,omitempty"`
	// Folder is the folder of the files, as the records name it (relative when the data folder
	// was given relative, $CIFARLAB_DATA/... in a notebook); "" for records in memory.
	Folder string `json:"folder,omitempty"`
	// TrainImages and TestImages are the number of images of each split (0: not loaded).
	TrainImages int `json:"train_images"`
	TestImages  int `json:"test_images"`
	// Subset says, for real data with fewer images than the official splits, how many of them
	// the run had, e.g. "20,000 of 50,000 training images" (a run on the 20k subset is never
	// taken for one on the whole data set); "" for the whole data set and for other data.
	Subset string `json:"subset,omitempty"`
}

// ProvenanceOf describes the records of a run: train, and test when loaded (it may be nil).
// Records LoadSplit read are described from their folder (StateOf: the synthetic marker, then Verify;
// environment variables in their Source, as a notebook's Lab writes it, are expanded);
// records SynthesizeRecords made are synthetic; any other records are in memory.
func ProvenanceOf(train, test *Records) Provenance {
	p, folder := provenanceBase(train, test), recordsFolder(train)
	if folder == "" || p.Kind == KindSynthetic {
		return p
	}
	return StateOf(filepath.Dir(os.ExpandEnv(folder)), train.Spec).describe(p, folder)
}

// Provenance is ProvenanceOf for records that s.LoadSplit loaded: s already says what their
// folder holds, so it is not looked at again. Records from elsewhere are described as in
// memory: describe them with ProvenanceOf.
func (s State) Provenance(train, test *Records) Provenance {
	p, folder := provenanceBase(train, test), recordsFolder(train)
	if folder == "" || p.Kind == KindSynthetic || train.Spec.ID() != s.spec.ID() {
		return p
	}
	return s.describe(p, folder)
}

// provenanceBase describes train and test as far as their Source tells: synthetic records made
// in memory, or else records in memory.
func provenanceBase(train, test *Records) Provenance {
	p := Provenance{Dataset: train.Spec.ID(), Kind: KindInMemory, TrainImages: train.Len()}
	if test != nil {
		p.TestImages = test.Len()
	}
	if strings.HasPrefix(train.Source, "synthetic ") {
		p.Kind = KindSynthetic
	}
	return p
}

// recordsFolder returns the folder of train's files as their Source names it, "" when that is
// no folder here.
func recordsFolder(train *Records) string {
	folder := filepath.Dir(train.Source)
	local := os.ExpandEnv(folder) // a notebook's Lab shows its data folder as $CIFARLAB_DATA/...
	if fi, err := os.Stat(local); err != nil || !fi.IsDir() || folder == "." {
		return ""
	}
	return folder
}

// describe completes p, of records whose files are in folder (as their Source names it), from
// the state s of the folder above it.
func (s State) describe(p Provenance, folder string) Provenance {
	if s.Kind == KindNone || s.Dir != filepath.Clean(os.ExpandEnv(folder)) {
		return p
	}
	p.Folder, p.Layout, p.Kind = folder, s.Layout.String(), s.Kind
	if p.Real() {
		p.Subset = subsetOf(s.spec, p.TrainImages, p.TestImages)
	}
	return p
}

// subsetOf says how many of spec's official images train and test (0: not loaded) are, where
// they are fewer: "20,000 of 50,000 training images", "... and 5,000 of 10,000 test images";
// "" when both splits are whole.
func subsetOf(spec Spec, train, test int) string {
	var parts []string
	if train < spec.TrainSize {
		parts = append(parts, fmt.Sprintf("%s of %s training images", thousands(train), thousands(spec.TrainSize)))
	}
	if test > 0 && test < spec.TestSize {
		parts = append(parts, fmt.Sprintf("%s of %s test images", thousands(test), thousands(spec.TestSize)))
	}
	return strings.Join(parts, " and ")
}

// thousands writes a count with commas between its groups of three digits, e.g. 20,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// isSynthetic reports whether root/spec.Dir holds the marker Synthesize writes.
func isSynthetic(root string, spec Spec) bool {
	_, err := ReadSynthInfo(root, spec)
	return err == nil
}

// Caption says in a few words which data a figure or an accuracy comes from, for the caption
// next to it: kind is the data's Kind (Provenance.Kind, Records.Kind). Synthetic data is said
// in capitals, as the first cell of a notebook says it:
//
//	SYNTHETIC cifar100 (generated images, not real accuracy)
//	real cifar10, verified
//	real cifar10, unverified
//	cifar10, not known whether real or synthetic
func Caption(dataset, kind string) string {
	switch {
	case dataset == "" && kind != KindSynthetic:
		return "not known whether real or synthetic"
	case dataset == "":
		dataset = "data"
	}
	switch kind {
	case KindSynthetic:
		return fmt.Sprintf("SYNTHETIC %s (generated images, not real accuracy)", dataset)
	case KindVerified, KindUnverified:
		return fmt.Sprintf("real %s, %s", dataset, strings.TrimPrefix(kind, "real, "))
	}
	return fmt.Sprintf("%s, not known whether real or synthetic", dataset)
}

// Caption says which data p is in a few words (see Caption), e.g. "real cifar10, verified".
func (p Provenance) Caption() string { return Caption(p.Dataset, p.Kind) }

// Real is true for real data, verified or not.
func (p Provenance) Real() bool { return p.Kind == KindVerified || p.Kind == KindUnverified }

// String describes the data in one line, e.g. "synthetic cifar10, binary layout, 5000 train /
// 1000 test images, in data/synthetic/cifar-10-batches-bin" or, for real data with fewer images
// than the official splits, "cifar10 (real, unverified), binary layout, 20000 train / 10000 test
// images, subset: 20,000 of 50,000 training images, in DIR".
func (p Provenance) String() string {
	s := fmt.Sprintf("%s %s", p.Kind, p.Dataset)
	if p.Kind == KindVerified || p.Kind == KindUnverified {
		s = fmt.Sprintf("%s (%s)", p.Dataset, p.Kind)
	}
	if p.Layout != "" {
		s += ", " + p.Layout + " layout"
	}
	s += fmt.Sprintf(", %d train", p.TrainImages)
	if p.TestImages > 0 {
		s += fmt.Sprintf(" / %d test", p.TestImages)
	}
	s += " images"
	if p.Subset != "" {
		s += ", subset: " + p.Subset
	}
	if p.Folder != "" {
		s += ", in " + p.Folder
	}
	return s
}
