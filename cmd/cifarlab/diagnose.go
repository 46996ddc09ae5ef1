package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

func init() {
	register(command{
		name:    "diagnose",
		summary: "check a model's head against a dataset's labels; exits 1 on a mismatch",
		run:     runDiagnose,
	})
}

func runDiagnose(args []string, stdout io.Writer) error {
	fs := newFlagSet("diagnose", "--dataset cifar10|cifar100 [--data DIR] [--model ARCH] [--head N] [--labels fine|coarse] [--from RUN_DIR] [--json]", stdout)
	dataset := fs.String("dataset", "cifar10", "dataset: cifar10 or cifar100")
	dataDir := fs.String("data", data.DefaultDir(), "CIFAR data `DIR` (the folder holding the dataset's folder, or its synthetic/ sub-folder) ($"+data.DirEnv+")")
	arch := fs.String("model", cifarlib.ArchCNN, "architecture: linear, cnn, resnet18, resnet20 or airbench94")
	head := fs.Int("head", 0, "override the head width (reproduces the head/label mismatch bug); 0 = the dataset's classes")
	labels := fs.String("labels", "fine", "CIFAR-100 label set: fine (100 classes) or coarse (20)")
	batch := fs.Int("batch", 128, "batch size of the inspected tensors")
	asJSON := fs.Bool("json", false, "print the diagnosis as JSON")
	from := fs.String("from", "", "diagnose the trained run in `RUN_DIR` (its checkpoint directory: architecture and head as saved) "+
		"against --dataset, with the dataset-switch checklist")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	spec, err := data.SpecByName(*dataset, *labels)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	d, err := diagnoseModelOrRun(spec, *from, *arch, *head, *dataDir, *batch)
	if err != nil {
		return err
	}
	if d.HeadOverridden && *head != 0 {
		d.Fix += fmt.Sprintf(" (on the command line: drop --head %d)", *head)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			return err
		}
	} else {
		fmt.Fprint(stdout, d.String())
		st := dataLocation(*dataDir, spec)
		fmt.Fprintf(stdout, "Data: %s (%s layout)\n", st.Dir, st.Layout)
	}
	if !d.OK {
		return &exitError{code: 1, err: errors.New(d.Verdict)}
	}
	return nil
}

// diagnoseModelOrRun diagnoses the trained run from (when set) or a fresh model of arch with
// head against spec's data in dataDir.
func diagnoseModelOrRun(spec data.Spec, from, arch string, head int, dataDir string, batch int) (*cifarlib.Diagnosis, error) {
	opts := cifarlib.DiagnoseOptions{BatchSize: batch}
	if from != "" {
		d, err := training.DiagnoseRun(from, spec, dataDir, opts)
		var nr *training.NotRunError
		if errors.As(err, &nr) {
			return nil, &exitError{code: 2, err: err}
		}
		return d, err
	}
	builder := cifarlib.NewModel(spec, arch)
	if head != 0 {
		builder = builder.Head(head)
	}
	m, err := builder.Done()
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	return cifarlib.DiagnoseWith(m, dataDir, opts)
}
