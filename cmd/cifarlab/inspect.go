package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

func init() {
	register(command{
		name:    "inspect",
		summary: "summarise a CIFAR dataset on disk: records, classes, label range and histogram, channel mean/std",
		run:     runInspect,
	})
}

// inspectReport is the summary printed by `cifarlab inspect` (the --json schema).
type inspectReport struct {
	Dataset    string `json:"dataset"`
	Labels     string `json:"labels"`
	NumClasses int    `json:"num_classes"`
	// Dir is the folder the files were read from, Layout its layout: "binary" or "python"
	// (torchvision's pickles).
	Dir    string `json:"dir"`
	Layout string `json:"layout"`
	// Source is "verified" (a checked download), "synthetic" or "unverified".
	Source    string          `json:"source"`
	Synthetic *data.SynthInfo `json:"synthetic,omitempty"`
	Splits    []splitReport   `json:"splits"`
}

// splitReport summarises one split.
type splitReport struct {
	Split     string   `json:"split"`
	Files     []string `json:"files"`
	Records   int      `json:"records"`
	LabelMin  int      `json:"label_min"`
	LabelMax  int      `json:"label_max"`
	Histogram []int    `json:"histogram"`
	// Mean and Std are per channel (R, G, B) on pixel values scaled to [0, 1].
	Mean [3]float64 `json:"mean"`
	Std  [3]float64 `json:"std"`
}

func runInspect(args []string, stdout io.Writer) error {
	fs := newFlagSet("inspect", "--dataset cifar10|cifar100 [--labels fine|coarse] [--data DIR] [--json]", stdout)
	dataset := fs.String("dataset", "", "dataset: cifar10 or cifar100 (required)")
	labels := fs.String("labels", "fine", "CIFAR-100 label set: fine (100 classes) or coarse (20)")
	dataDir := fs.String("data", data.DefaultDir(), "data `DIR` holding the dataset's folder (or its synthetic/ sub-folder) ($"+data.DirEnv+")")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *dataset == "" {
		return &exitError{code: 2, err: errors.New("--dataset is required: cifar10 or cifar100")}
	}
	spec, err := data.SpecByName(*dataset, *labels)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	report, err := inspectData(*dataDir, spec)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	printInspect(stdout, report)
	return nil
}

// inspectData loads both splits of spec from root (or, if root has no data for it, from
// data.SyntheticDir(root), where Prepare puts synthetic data) and summarises them; its source
// is data.StateOf's: verified, unverified or synthetic.
func inspectData(root string, spec data.Spec) (*inspectReport, error) {
	st := dataLocation(root, spec)
	root, layout := st.LoadRoot, st.Layout
	r := &inspectReport{Dataset: spec.Name, Labels: spec.Labels.String(), NumClasses: spec.NumClasses,
		Dir: st.Dir, Layout: layout.String(), Source: "unverified"}
	switch st.Kind {
	case data.KindVerified:
		r.Source = "verified"
	case data.KindSynthetic:
		if info, err := data.ReadSynthInfo(root, spec.InLayout(layout)); err == nil {
			r.Source, r.Synthetic = "synthetic", &info
		}
	}
	for _, split := range []data.Split{data.SplitTrain, data.SplitTest} {
		recs, err := data.LoadSplit(root, spec, split)
		if err != nil {
			return nil, err
		}
		s := splitReport{Split: split.String(), Files: split.Files(spec.InLayout(layout)), Records: recs.Len(),
			LabelMin: -1, LabelMax: -1, Histogram: recs.LabelHistogram()}
		for l, n := range s.Histogram {
			if n == 0 {
				continue
			}
			if s.LabelMin < 0 {
				s.LabelMin = l
			}
			s.LabelMax = l
		}
		s.Mean, s.Std = recs.ChannelStats()
		r.Splits = append(r.Splits, s)
	}
	return r, nil
}

// printInspect writes the report for people.
func printInspect(w io.Writer, r *inspectReport) {
	fmt.Fprintf(w, "dataset:  %s, %s labels, %d classes\n", r.Dataset, r.Labels, r.NumClasses)
	source := r.Source
	if r.Synthetic != nil {
		source = fmt.Sprintf("synthetic (seed %d, label noise %g)", r.Synthetic.Seed, r.Synthetic.LabelNoise)
	}
	fmt.Fprintf(w, "data:     %s [%s, %s layout]\n", r.Dir, source, r.Layout)
	for _, s := range r.Splits {
		empty := 0
		for _, n := range s.Histogram {
			if n == 0 {
				empty++
			}
		}
		fmt.Fprintf(w, "%s: %d records in %s\n", s.Split, s.Records, strings.Join(s.Files, ", "))
		fmt.Fprintf(w, "  labels: min %d, max %d, %d of %d classes present\n", s.LabelMin, s.LabelMax, len(s.Histogram)-empty, len(s.Histogram))
		fmt.Fprintf(w, "  mean:   R %.4f  G %.4f  B %.4f\n", s.Mean[0], s.Mean[1], s.Mean[2])
		fmt.Fprintf(w, "  std:    R %.4f  G %.4f  B %.4f\n", s.Std[0], s.Std[1], s.Std[2])
		fmt.Fprintf(w, "  histogram (label: count):\n")
		for start := 0; start < len(s.Histogram); start += 10 {
			var b strings.Builder
			for l := start; l < min(start+10, len(s.Histogram)); l++ {
				fmt.Fprintf(&b, " %3d:%-5d", l, s.Histogram[l])
			}
			fmt.Fprintf(w, "   %s\n", strings.TrimRight(b.String(), " "))
		}
	}
}
