package data

import (
	"fmt"
	"path/filepath"
)

// KindNone is a State's Kind when a data folder holds neither real nor synthetic data.
const KindNone = "none"

// State is what a data folder holds for a dataset, as StateOf decides it: the one decision
// that the notebooks (PrepareRoot), the CLI (training's LoadSplitOrSynthetic), `cifarlab
// doctor` and a run's Provenance follow. Real data is used wherever it is present, verified
// or not: "unverified" is a note, never a reason to use synthetic data. LoadSplit and
// Provenance load and describe the splits from what StateOf found, without a second look.
type State struct {
	// Dataset is the dataset's name ("cifar10", "cifar100").
	Dataset string
	// Kind is KindVerified, KindUnverified, KindSynthetic or KindNone.
	Kind string
	// Root is the data folder asked about; LoadRoot the folder to pass to LoadSplit: Root for
	// real data (and for synthetic data written straight into it), SyntheticDir(Root) for the
	// synthetic stand-in Prepare writes; "" for KindNone.
	Root, LoadRoot string
	// Dir is the dataset's folder (LoadRoot/cifar-10-batches-bin, …); "" for KindNone.
	Dir string
	// Layout is the layout of Dir.
	Layout Layout
	// NotVerified is Verify's error for KindUnverified: why the data is not known to be the
	// official files (it wraps ErrNotVerified); nil otherwise.
	NotVerified error
	// Images, for binary-layout files of other sizes than the official ones (a subset or a
	// conversion, which no official checksum covers), says how many images the folder holds
	// against the official files, e.g. "20000 training and 10000 test images; the official
	// files hold 50000 and 10000"; "" otherwise.
	Images string
	// Itself, for KindNone, says that Root is the dataset's folder itself, and which folder to
	// give instead (its Parent); nil otherwise.
	Itself *FolderItselfError
	// spec is the Spec asked about, which LoadSplit and Provenance use.
	spec Spec
}

// StateOf decides what root holds for spec. Real data is a dataset folder in either layout
// (binary, or the python pickles torchvision downloads; see DetectLayout) without the
// SyntheticMarker: KindVerified when Verify accepts it, else KindUnverified. Otherwise root's
// folder written by Synthesize, or else the synthetic stand-in in SyntheticDir(root), is
// KindSynthetic; with neither, KindNone. It reads markers and, for a torchvision folder, the
// files' MD5s; it never writes.
func StateOf(root string, spec Spec) State {
	st := State{Dataset: spec.Name, Kind: KindNone, Root: root, spec: spec}
	if checkSpec(spec) != nil {
		return st
	}
	// root's own data (real, or synthetic written into it), else Prepare's synthetic stand-in.
	// A root without a dataset folder may be the folder itself: said when nothing else is found.
	var itself *FolderItselfError
	for _, dir := range []string{root, SyntheticDir(root)} {
		layout, in, err := detectLayout(dir, spec)
		if err != nil {
			if dir == root {
				itself = folderItself(root, spec)
			}
			continue
		}
		synthetic := isSynthetic(dir, in)
		if dir != root && !synthetic {
			break // SyntheticDir(root) counts only when it holds synthetic data
		}
		st.LoadRoot, st.Layout, st.Dir, st.Kind = dir, layout, filepath.Join(dir, in.Dir), KindSynthetic
		if !synthetic {
			st.Kind = KindVerified
			if st.NotVerified = verifyIn(root, in, layout); st.NotVerified != nil {
				st.Kind = KindUnverified
				if layout == LayoutBinary {
					st.Images = subsetImages(st.Dir, in)
				}
			}
		}
		return st
	}
	st.Itself = itself
	return st
}

// Real is true for real data, verified or not.
func (s State) Real() bool { return s.Kind == KindVerified || s.Kind == KindUnverified }

// String says the state in one plain line, the same in the notebooks, the CLI and doctor:
//
//	cifar10: real, verified (binary layout, in DIR)
//	cifar10: real, unverified (binary layout, in DIR): not checked against the official checksums; check it with: cifarlab verify --data ROOT --dataset cifar10
//	SYNTHETIC DATA: no real cifar10 in ROOT, so generated images stand in (in DIR) and accuracies are not real CIFAR accuracy; for real data set CIFARLAB_DATA to the folder holding cifar-10-batches-bin/ or cifar-10-batches-py/, or run: cifarlab download --dataset cifar10 --data ROOT
//	cifar10: no data in ROOT (neither cifar-10-batches-bin/ nor cifar-10-batches-py/); the notebooks use synthetic data until you run: cifarlab download --dataset cifar10 --data ROOT
func (s State) String() string {
	spec, err := SpecByName(s.Dataset, "")
	if err != nil {
		return fmt.Sprintf("%s: unknown dataset", s.Dataset)
	}
	bin, py := spec.InLayout(LayoutBinary).Dir, spec.InLayout(LayoutPython).Dir
	switch s.Kind {
	case KindVerified:
		return fmt.Sprintf("%s: %s (%s layout, in %s)", s.Dataset, s.Kind, s.Layout, s.Dir)
	case KindUnverified:
		if s.Images != "" {
			return fmt.Sprintf("%s: %s (%s layout, in %s): a subset or a conversion, not the official files (%s), so no official checksum "+
				"covers it and `cifarlab verify` can only confirm that; it is used as real data", s.Dataset, s.Kind, s.Layout, s.Dir, s.Images)
		}
		return fmt.Sprintf("%s: %s (%s layout, in %s): not checked against the official checksums; check it with: %s",
			s.Dataset, s.Kind, s.Layout, s.Dir, s.VerifyCommand())
	case KindSynthetic:
		return fmt.Sprintf("SYNTHETIC DATA: no real %s in %s, so generated images stand in (in %s) and accuracies are not real CIFAR accuracy; "+
			"for real data set %s to the folder holding %s/ or %s/, or run: cifarlab download --dataset %s --data %s",
			s.Dataset, s.Root, s.Dir, DirEnv, bin, py, s.Dataset, s.Root)
	}
	if s.Itself != nil {
		return fmt.Sprintf("%s: no data in %s: %s", s.Dataset, s.Root, s.Itself.Error())
	}
	return fmt.Sprintf("%s: no data in %s (neither %s/ nor %s/); the notebooks use synthetic data until you run: cifarlab download --dataset %s --data %s",
		s.Dataset, s.Root, bin, py, s.Dataset, s.Root)
}

// VerifyCommand is the command that checks the data of Root against the official checksums.
func (s State) VerifyCommand() string {
	return fmt.Sprintf("cifarlab verify --data %s --dataset %s", s.Root, s.Dataset)
}
