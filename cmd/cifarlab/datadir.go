package main

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// dataLocation returns the data root to read spec from (root, or data.SyntheticDir(root)
// when root has no data for spec but synthetic data is there, as Prepare writes it), the
// dataset's folder in it and its layout (binary, or python: torchvision's pickles).
func dataLocation(root string, spec data.Spec) (dataRoot, dir string, layout data.Layout) {
	if _, err := data.DetectLayout(root, spec); errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(filepath.Join(data.SyntheticDir(root), spec.Dir)); serr == nil {
			root = data.SyntheticDir(root)
		}
	}
	dir, layout = data.Locate(root, spec)
	return root, dir, layout
}
