package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// dataStatus is one dataset's entry of `cifarlab verify --status --json`: what a data folder
// holds for it, in words that carry no path, so that a notebook's metadata can name the data its
// outputs come from (notebooks/regenerate.sh).
type dataStatus struct {
	Dataset string `json:"dataset"`
	// Kind is data.StateOf's: "real, verified", "real, unverified", "synthetic" or "none".
	Kind string `json:"kind"`
	// Layout is "binary" or "python"; "" for none.
	Layout string `json:"layout,omitempty"`
	// TrainImages and TestImages are the images of each split (0 for none).
	TrainImages int `json:"train_images"`
	TestImages  int `json:"test_images"`
	// Line is all of it in one line, e.g. "cifar10: real, unverified (binary layout, 20000 train
	// / 10000 test images)", "cifar100: synthetic (binary layout, 5000 train / 1000 test
	// images)", "cifar100: no data".
	Line string `json:"line"`
}

// statusOf says what root holds for spec, counting the images of each split (it reads them).
func statusOf(root string, spec data.Spec) (dataStatus, error) {
	st := data.StateOf(root, spec)
	s := dataStatus{Dataset: spec.Name, Kind: st.Kind, Line: spec.Name + ": no data"}
	if st.Kind == data.KindNone {
		return s, nil
	}
	s.Layout = st.Layout.String()
	for _, split := range []struct {
		split data.Split
		n     *int
	}{{data.SplitTrain, &s.TrainImages}, {data.SplitTest, &s.TestImages}} {
		recs, err := data.LoadSplit(st.LoadRoot, spec, split.split)
		if err != nil {
			return s, fmt.Errorf("%s: %s, but its %s split does not load: %w", spec.Name, st.Kind, split.split, err)
		}
		*split.n = recs.Len()
	}
	s.Line = fmt.Sprintf("%s: %s (%s layout, %d train / %d test images)", spec.Name, st.Kind, s.Layout, s.TrainImages, s.TestImages)
	return s, nil
}

// writeStatusJSON writes the status of each of specs in root as a JSON array.
func writeStatusJSON(w io.Writer, root string, specs []data.Spec) error {
	out := make([]dataStatus, 0, len(specs))
	for _, spec := range specs {
		s, err := statusOf(root, spec)
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		out = append(out, s)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
