package main

import (
	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// dataLocation returns the data root to read spec from, as data.StateOf decides it (root, or
// data.SyntheticDir(root) when root has no data for spec but synthetic data is there, as
// Prepare writes it), the dataset's folder in it and its layout (binary, or python:
// torchvision's pickles).
func dataLocation(root string, spec data.Spec) (dataRoot, dir string, layout data.Layout) {
	if st := data.StateOf(root, spec); st.Kind != data.KindNone {
		return st.LoadRoot, st.Dir, st.Layout
	}
	dir, layout = data.Locate(root, spec)
	return root, dir, layout
}
