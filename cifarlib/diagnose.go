package cifarlib

import (
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute"
)

// Diagnosis is Diagnose's report on a model and a dataset.
type Diagnosis struct {
	// Model describes the model (Model.String()).
	Model string `json:"model"`
	// Arch, Dataset (Spec.ID()), NumClasses (the dataset's), HeadWidth (the model's) and
	// HeadOverridden (forced with ModelBuilder.Head).
	Arch           string `json:"arch"`
	Dataset        string `json:"dataset"`
	NumClasses     int    `json:"num_classes"`
	HeadWidth      int    `json:"head_width"`
	HeadOverridden bool   `json:"head_overridden"`
	// Summary is the model's per-layer summary (nil if it could not be built).
	Summary *Summary `json:"summary,omitempty"`
	// Splits has the label statistics of the train and test splits.
	Splits []data.SplitLabels `json:"splits"`
	// LabelDType and LabelShape describe the label tensor of a training batch as the Dataset
	// yields it (e.g. "int32", [128, 1]); ImageShape the image tensor.
	LabelDType string `json:"label_dtype"`
	LabelShape []int  `json:"label_shape"`
	ImageShape []int  `json:"image_shape"`
	// OK is true when nothing is wrong; Problems lists what is; Verdict is a one-line
	// conclusion and Fix says what to change.
	OK       bool     `json:"ok"`
	Problems []string `json:"problems,omitempty"`
	Verdict  string   `json:"verdict"`
	Fix      string   `json:"fix,omitempty"`
	// From and FromDataset name the trained run a DiagnoseRun diagnosis is about, and the
	// dataset it was trained on; Checklist is its dataset-switch checklist.
	From        string      `json:"from,omitempty"`
	FromDataset string      `json:"from_dataset,omitempty"`
	Checklist   []CheckItem `json:"checklist,omitempty"`
}

// DiagnoseOptions configures DiagnoseWith.
type DiagnoseOptions struct {
	// Backend builds the summary graph (nothing is executed); nil uses the pure-Go backend.
	Backend compute.Backend
	// BatchSize is the batch used to inspect the tensors a Dataset yields (default 128).
	BatchSize int
}

// Diagnose inspects a model against the dataset under root (the folder holding
// spec.Dir, or its "synthetic" sub-folder made by Prepare): head width vs classes, label
// min/max/histogram per split, the dtype and shape of the label tensor, and a verdict with the
// fix. A mismatch is reported in the Diagnosis (OK false), not as an error; errors are for data
// that cannot be read.
func Diagnose(m *Model, root string) (*Diagnosis, error) {
	return DiagnoseWith(m, root, DiagnoseOptions{})
}

// DiagnoseWith is Diagnose with options.
func DiagnoseWith(m *Model, root string, opts DiagnoseOptions) (*Diagnosis, error) {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 128
	}
	if opts.Backend == nil {
		b, err := backends.New(backends.Go)
		if err != nil {
			return nil, err
		}
		opts.Backend = b
	}
	d := &Diagnosis{Model: m.String(), Arch: m.Arch, Dataset: m.Spec.ID(), NumClasses: m.Spec.NumClasses,
		HeadWidth: m.NumClasses, HeadOverridden: m.HeadOverridden}
	sum, err := Summarize(m, opts.Backend, opts.BatchSize)
	if err != nil {
		return nil, err
	}
	d.Summary = sum
	if sum.HeadWidth != m.NumClasses {
		return nil, fmt.Errorf("cifarlib: %s produced logits of width %d, not %d: this is a cifarlib bug", m, sum.HeadWidth, m.NumClasses)
	}

	st := data.StateOf(root, m.Spec) // root's data, else the synthetic stand-in beside it; the labels' Kind is its
	var train *data.Records
	for _, split := range []data.Split{data.SplitTrain, data.SplitTest} {
		recs, err := st.LoadSplit(split)
		if err != nil {
			return nil, err
		}
		if split == data.SplitTrain {
			train = recs
		}
		labels := recs.LabelStats(m.NumClasses)
		labels.Split, labels.Source = split.String(), st.LoadRoot
		d.Splits = append(d.Splits, labels)
	}

	// The tensors a training Dataset yields, and the input contract on them.
	ds, err := data.NewDataset("diagnose", train, data.DatasetOptions{BatchSize: min(opts.BatchSize, train.Len()), Epochs: 1})
	if err != nil {
		return nil, err
	}
	for b, err := range ds.Iter() {
		if err != nil {
			return nil, err
		}
		d.ImageShape = append([]int(nil), b.Inputs[0].Shape().Dimensions...)
		d.LabelShape = append([]int(nil), b.Labels[0].Shape().Dimensions...)
		d.LabelDType = strings.ToLower(b.Labels[0].DType().String())
		if err := m.CheckBatch(b); err != nil {
			d.Problems = append(d.Problems, "batch tensors: "+err.Error())
		}
		_ = b.Finalize()
		break
	}

	d.verdict(m)
	return d, nil
}

// verdict fills OK, Problems, Verdict and Fix.
func (d *Diagnosis) verdict(m *Model) {
	if d.HeadWidth != d.NumClasses {
		he := &HeadMismatchError{Dataset: d.Dataset, HeadWidth: d.HeadWidth, NumClasses: d.NumClasses, Overridden: d.HeadOverridden}
		d.Problems = append([]string{he.Error()}, d.Problems...)
		for _, s := range d.Splits {
			if s.BeyondHead > 0 {
				d.Problems = append(d.Problems, fmt.Sprintf("%s split: %d of %d labels are >= %d (labels %d..%d, "+
					"first at examples %v): an unguarded loss gives them a loss of exactly 0, so they are silently ignored",
					s.Split, s.BeyondHead, s.Count, d.HeadWidth, s.Min, s.Max, s.FirstBeyondHead))
			}
		}
	}
	for _, s := range d.Splits {
		if s.Count > 0 && s.Max >= d.NumClasses {
			d.Problems = append(d.Problems, fmt.Sprintf("%s split: label %d outside the dataset's %d classes", s.Split, s.Max, d.NumClasses))
		}
	}
	d.OK = len(d.Problems) == 0
	if d.OK {
		d.Verdict = fmt.Sprintf("OK: the head has %d outputs for the %d classes of %s, and every label of %s is in [0, %d)",
			d.HeadWidth, d.NumClasses, d.Dataset, d.splitNames(), d.NumClasses)
		return
	}
	if d.HeadWidth != d.NumClasses {
		d.Verdict = fmt.Sprintf("MISMATCH: the head has %d outputs but %s has %d classes", d.HeadWidth, d.Dataset, d.NumClasses)
		labels := "fine"
		if m.Spec.Labels == data.LabelsCoarse {
			labels = "coarse"
		}
		d.Fix = fmt.Sprintf("build the model for the dataset: cifarlib.NewModel(data.CIFAR%s, %q) without Head(%d), "+
			"so the head has %d outputs", specConstructor(m.Spec, labels), d.Arch, d.HeadWidth, d.NumClasses)
		return
	}
	d.Verdict = "PROBLEM: " + d.Problems[0]
	d.Fix = "feed the model batches from cifarlib's Dataset for the same Spec"
}

func specConstructor(s data.Spec, labels string) string {
	if s.Name == "cifar10" {
		return "10()"
	}
	if labels == "coarse" {
		return "100(data.LabelsCoarse)"
	}
	return "100(data.LabelsFine)"
}

func (d *Diagnosis) splitNames() string {
	names := make([]string, len(d.Splits))
	for i, s := range d.Splits {
		names[i] = s.Split
	}
	return strings.Join(names, " and ")
}

// String renders the diagnosis as text: the summary, the label statistics, the tensors and
// the verdict.
func (d *Diagnosis) String() string {
	var b strings.Builder
	if d.Summary != nil {
		b.WriteString(d.Summary.String())
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Dataset %s: %d classes; model head: %d outputs", d.Dataset, d.NumClasses, d.HeadWidth)
	if d.HeadOverridden {
		fmt.Fprintf(&b, " (overridden)")
	}
	b.WriteString("\n")
	for _, s := range d.Splits {
		fmt.Fprintf(&b, "  %-5s %6d labels, min %d, max %d, classes present %d/%d", s.Split, s.Count, s.Min, s.Max,
			s.ClassesPresent(), len(s.Histogram))
		if s.BeyondHead > 0 {
			fmt.Fprintf(&b, ", %d labels >= head width %d", s.BeyondHead, d.HeadWidth)
		}
		fmt.Fprintf(&b, "\n        histogram %v\n", s.Histogram)
	}
	fmt.Fprintf(&b, "Batch tensors: images float32 %v, labels %s %v\n", d.ImageShape, d.LabelDType, d.LabelShape)
	for _, p := range d.Problems {
		fmt.Fprintf(&b, "Problem: %s\n", p)
	}
	b.WriteString(d.SwitchChecklist())
	fmt.Fprintf(&b, "Verdict: %s\n", d.Verdict)
	if d.Fix != "" {
		fmt.Fprintf(&b, "Fix: %s\n", d.Fix)
	}
	return b.String()
}

// CheckItem is one item of the dataset-switch checklist (the story's section 5: model output
// dimension, loss configuration, evaluation metrics, preprocessing) for a trained run pointed at
// another dataset.
type CheckItem struct {
	// Item is "head width", "label range", "normalisation", "metrics" or "class names".
	Item string `json:"item"`
	// Status is CheckOK, CheckFail or CheckNote; Detail says what was compared, Fix what to do.
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Statuses of a CheckItem.
const (
	// CheckOK: nothing to change for this item.
	CheckOK = "OK"
	// CheckFail: using the run on the target as it is would be wrong; CheckItem.Fix says what to do.
	CheckFail = "FAIL"
	// CheckNote: a difference to know about that does not make the switch wrong.
	CheckNote = "NOTE"
)

// SwitchChecklist renders a DiagnoseRun diagnosis's dataset-switch checklist, one item a line
// (and its fix on the next); "" for a diagnosis of a model rather than a run. String includes it.
func (d *Diagnosis) SwitchChecklist() string {
	if len(d.Checklist) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Dataset switch checklist for run %s (trained on %s):\n", d.From, d.FromDataset)
	shown := map[string]bool{}
	for _, c := range d.Checklist {
		fmt.Fprintf(&b, "  [%-4s] %-13s %s\n", c.Status, c.Item, c.Detail)
		label := "fix:"
		if c.Status == CheckNote {
			label = "note:"
		}
		switch {
		case c.Fix == "":
		case shown[c.Fix]:
			fmt.Fprintf(&b, "         %-13s %s the same as above\n", "", label)
		default:
			fmt.Fprintf(&b, "         %-13s %s %s\n", "", label, c.Fix)
			shown[c.Fix] = true
		}
	}
	return b.String()
}
