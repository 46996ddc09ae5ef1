package main

import (
	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// dataLocation returns what root holds for spec, as data.StateOf decides it, with LoadRoot the
// folder to read it from (root, or data.SyntheticDir(root) when root has no data for spec but
// synthetic data is there, as Prepare writes it), Dir the dataset's folder in it and Layout its
// layout (binary, or python: torchvision's pickles). With no data at all (KindNone) LoadRoot is
// root and Dir the folder that is missing, so that loading it says how to get the data.
func dataLocation(root string, spec data.Spec) data.State {
	st := data.StateOf(root, spec)
	if st.Kind == data.KindNone {
		st.LoadRoot = root
		st.Dir, st.Layout = data.Locate(root, spec)
	}
	return st
}
