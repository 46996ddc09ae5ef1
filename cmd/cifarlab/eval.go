package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

func init() {
	register(command{
		name:    "eval",
		summary: "evaluate a trained checkpoint: accuracy, top-5 (CIFAR-100) and per-class accuracy",
		run:     runEval,
	})
}

func runEval(args []string, stdout io.Writer) error {
	fs := newFlagSet("eval", "--checkpoint DIR [--split test|train] [--batch B] [--max N] "+synopsis(evalSettings...)+" [--json]", stdout)
	ckptDir := fs.String("checkpoint", "", "checkpoint `DIR` written by cifarlab train (required); it records the dataset and the model")
	splitName := fs.String("split", "test", "split to evaluate: test or train")
	batch := fs.Int("batch", training.Defaults().Eval.BatchSize, "evaluation batch size")
	maxExamples := fs.Int("max", 0, "evaluate only the first N examples (0: all)")
	given := settingFlags(fs, evalUsage, evalSettings...)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *ckptDir == "" {
		return &exitError{code: 2, err: fmt.Errorf("--checkpoint is required: the checkpoint folder of a run of cifarlab train")}
	}
	split, err := data.ParseSplit(*splitName)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if *batch <= 0 || *maxExamples < 0 {
		return &exitError{code: 2, err: fmt.Errorf("--batch must be positive and --max not negative (got %d, %d)", *batch, *maxExamples)}
	}
	s := training.Defaults()
	if err := s.Apply(given.set); err != nil { // the table's parsing and ranges
		return &exitError{code: 2, err: err}
	}
	return evaluate(stdout, evalRequest{ckptDir: *ckptDir, dataDir: s.Data.Dir, backendName: s.Compute.Backend, split: split,
		batch: *batch, maxExamples: *maxExamples, devices: s.Compute.Devices, tta: s.Eval.TTA, precision: s.Compute.Precision, asJSON: *asJSON})
}

// evalSettings are the settings of the table that eval takes as flags, and evalUsage eval's own
// words for those whose row says them for training.
var (
	evalSettings = []string{"data", "backend", "devices", "precision", "tta"}
	evalUsage    = map[string]string{
		"devices":   "shard each evaluation batch across `N|all` devices (any count: checkpoints do not depend on it)",
		"precision": "what convolutions and matrix products compute in (any checkpoint: they hold float32 whatever the training precision)",
		"tta": "test-time augmentation, airbench's levels (1: the image and its left-right mirror; 2: also the image shifted by one pixel " +
			"up-left and down-right): the logits of the views are averaged",
	}
)

// evalRequest is what cifarlab eval is asked to do, its flags checked.
type evalRequest struct {
	ckptDir, dataDir, backendName    string
	split                            data.Split
	batch, maxExamples, devices, tta int
	precision                        cifarlib.Precision
	asJSON                           bool
}

// evaluate loads the checkpoint on the backend, evaluates it on the split and writes the report
// (or its JSON), saying what it does on stderr as it goes.
func evaluate(stdout io.Writer, req evalRequest) (err error) {
	status := training.NewLineStatus(os.Stderr, "") // what it is doing, from its first second
	defer func() { status.Close(err) }()
	status.Event(training.Event{Kind: training.EventBackend})
	backend, err := backends.NewWithDevices(req.backendName, req.devices)
	if errors.Is(err, backends.ErrDevices) {
		return &exitError{code: 2, err: err}
	}
	if err != nil {
		return err
	}
	ck, err := training.LoadCheckpoint(req.ckptDir, backend)
	if err != nil {
		return err
	}
	if err := cifarlib.CheckPrecision(backend, req.precision); err != nil {
		return err
	}
	ck.Model.Precision = req.precision
	status.Event(training.Event{Kind: training.EventData})
	recs, err := training.LoadSplitOrSynthetic(req.dataDir, ck.Model.Spec, req.split)
	if err != nil {
		return err
	}
	opts := training.EvalOptions{BatchSize: req.batch, MaxExamples: req.maxExamples, Split: req.split.String(),
		Devices: req.devices, TTA: req.tta, OnEvent: status.Event}
	res, err := evaluateStored(ck, req.ckptDir, recs, opts, status)
	if err != nil {
		return err
	}
	if req.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Checkpoint training.CheckpointInfo `json:"checkpoint"`
			Precision  cifarlib.Precision      `json:"precision"`
			*training.EvalResult
		}{ck.Info, req.precision, res})
	}
	fmt.Fprintf(stdout, "checkpoint %s: %s, step %d, precision %s\n", req.ckptDir, ck.Model, ck.Info.Step, req.precision)
	return res.WriteReport(stdout)
}

// evaluateStored evaluates the checkpoint ck of the run folder dir on recs with opts, as a
// notebook's lab.Load(...).Evaluate does: an evaluation of the same weights, images and options
// that the run folder keeps (training.StoredEval: by a cell, the lab process or this command) is
// returned at once, and a line on stderr says so; otherwise it evaluates, its status line on
// stderr (closed before the report), and the run folder keeps the result (training.StoreEval).
func evaluateStored(ck *training.LoadedCheckpoint, dir string, recs *data.Records, opts training.EvalOptions, status *training.Status) (*training.EvalResult, error) {
	key, keyErr := ck.EvalKey(recs, opts)
	if keyErr == nil {
		if s, ok := training.StoredEval(dir, key); ok {
			status.Close(nil)
			fmt.Fprintf(os.Stderr, "%s: %s\n", s.Result.Summary(), s.Reused(dir))
			return s.Result, nil
		}
	}
	ctx, stop := training.InterruptContext(context.Background())
	defer stop()
	began := time.Now()
	res, err := training.Evaluate(ctx, ck.Backend, ck.Model, ck.Store, recs, opts)
	status.Close(err) // before the report
	if err == nil && keyErr == nil {
		_ = training.StoreEval(dir, key, res, began, time.Since(began)) // not kept: the next evaluation computes it again
	}
	return res, err
}
