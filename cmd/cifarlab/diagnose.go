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
	fs := newFlagSet("diagnose", synopsis(diagnoseSettings...)+" [--batch B] [--from RUN_DIR] [--json]", stdout)
	given := settingFlags(fs, diagnoseUsage, diagnoseSettings...)
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
	s := training.Defaults()
	if err := s.Apply(given.set); err != nil { // the table's parsing and ranges
		return &exitError{code: 2, err: err}
	}
	d, err := diagnoseModelOrRun(s.Data.Spec, *from, s.Model.Arch, s.Model.Head, s.Data.Dir, *batch)
	if err != nil {
		return err
	}
	if d.HeadOverridden && s.Model.Head != 0 {
		d.Fix += fmt.Sprintf(" (on the command line: drop --head %d)", s.Model.Head)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			return err
		}
	} else {
		fmt.Fprint(stdout, d.String())
		st := dataLocation(s.Data.Dir, s.Data.Spec)
		fmt.Fprintf(stdout, "Data: %s (%s layout)\n", st.Dir, st.Layout)
	}
	if !d.OK {
		return &exitError{code: 1, err: errors.New(d.Verdict)}
	}
	return nil
}

// diagnoseSettings are the settings of the table that diagnose takes as flags, and
// diagnoseUsage its own words for those whose row says them for training.
var (
	diagnoseSettings = []string{"dataset", "labels", "model", "head", "data"}
	diagnoseUsage    = map[string]string{
		"model": "the architecture of the fresh model to diagnose (without --from)",
		"head":  "override the fresh model's head width (reproduces the head/label mismatch bug)",
	}
)

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
