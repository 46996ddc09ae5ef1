package training

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/distributed"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ui/commandline"
	"github.com/gomlx/gomlx/ui/gonb/plotly"
	"github.com/gomlx/gomlx/ui/notebooks"
)

// stepRunner is the devices part of a Trainer: it runs the training steps on one device
// (oneDevice) or with each global batch sharded across several (*trainDevices).
type stepRunner interface {
	// numDevices is the number of devices the steps run on.
	numDevices() int
	// run trains steps steps of t's step dataset. A cancelled ctx stops after the current step.
	run(ctx context.Context, t *Trainer, steps int) error
	// count sets res's Interrupted and zero-loss counts for the steps steps trained from ds.
	count(res *Result, ds *stepDataset, steps, batchSize int)
}

// openDevices returns the backend of plan p (the Env's, else the one its Programs keeps,
// else one created by name for Compute.Devices devices) and the devices part that trains on it.
func openDevices(p *plan, env Env) (compute.Backend, stepRunner, error) {
	b := env.Backend
	if b == nil {
		var err error
		if b, err = env.Programs.backendFor(p.Compute.Backend, p.Compute.Devices); err != nil {
			return nil, nil, devicesConfigError(err)
		}
	}
	n, err := backends.ResolveDevices(b, p.Compute.Devices)
	if err != nil {
		return nil, nil, devicesConfigError(err)
	}
	if n < 2 {
		return b, oneDevice{}, nil
	}
	if err := backends.CheckBatchDivisible("Data.BatchSize", p.Data.BatchSize, n); err != nil {
		return nil, nil, err
	}
	mesh, err := backends.NewDeviceMesh(n)
	if err != nil {
		return nil, nil, err
	}
	return b, &trainDevices{n: n, mesh: mesh}, nil
}

// oneDevice trains on one device, with GoMLX's Loop.RunEpochs over the step dataset.
type oneDevice struct{}

func (oneDevice) numDevices() int { return 1 }

func (oneDevice) run(_ context.Context, t *Trainer, _ int) error {
	_, err := t.loop.RunEpochs(t.steps, 1)
	return err
}

func (oneDevice) count(res *Result, ds *stepDataset, _, _ int) {
	res.Interrupted = ds.interrupted
	res.ZeroLoss.Seen, res.ZeroLoss.OutOfRange = ds.seen, ds.outOfRange
}

// trainDevices is the data-parallel state of a Trainer over n >= 2 devices.
type trainDevices struct {
	n     int
	mesh  *distributed.DeviceMesh
	split *shardSplitter
	// interrupted is set when the context was cancelled and the loop stopped after a step.
	interrupted bool
}

func (d *trainDevices) numDevices() int { return d.n }

// run trains steps steps of t's step dataset, each global batch sharded across the devices,
// with GoMLX's Loop.RunSteps over a DistributedAccumulator (which makes the loop call
// Trainer.DistributedTrainStep). A cancelled ctx stops the loop after the current step.
func (d *trainDevices) run(ctx context.Context, t *Trainer, steps int) error {
	d.split = &shardSplitter{inner: t.steps, devices: d.n, headWidth: t.model.NumClasses}
	ds, err := newAccumulator(t.backend, d.mesh, d.split)
	if err != nil {
		return err
	}
	if err := backends.ReplicateUnsharded(t.store, d.mesh); err != nil {
		return err
	}
	t.loop.OnStep("cifarlib: interrupt", 1000, func(loop *train.Loop, _ []*tensors.Tensor) error {
		if ctx.Err() != nil && loop.EndStep > loop.LoopStep+1 {
			// Loop.RunSteps reads EndStep after each step: it ends after this one, cleanly
			// (its OnEnd hooks, such as the progress bar's, run).
			loop.EndStep = loop.LoopStep + 1
			d.interrupted = true
		}
		return nil
	})
	_, err = t.loop.RunSteps(ds, steps)
	if err != nil && cifarlib.GuardErrorOf(err) == err && t.hookErr == nil && t.steps.interrupted {
		// Cancelled between a step's hooks and the next batch: the data ended first.
		d.interrupted = true
		return nil
	}
	return err
}

// count sets the training examples fed to the first steps steps of a distributed run and how
// many of them had labels outside the head: the distributed dataset reads ahead, so ds's own
// counts are past what was trained.
func (d *trainDevices) count(res *Result, ds *stepDataset, steps, batchSize int) {
	res.Interrupted = ds.interrupted || d.interrupted
	res.ZeroLoss.Seen, res.ZeroLoss.OutOfRange = 0, 0
	if d.split != nil {
		res.ZeroLoss.Seen, res.ZeroLoss.OutOfRange = int64(steps)*int64(batchSize), d.split.outOfRange(steps)
	}
}

// devicesConfigError reports the backends' *DevicesValueError for Compute.Devices as a
// *ConfigError of that field; other errors pass unchanged.
func devicesConfigError(err error) error {
	if ve := (*backends.DevicesValueError)(nil); errors.As(err, &ve) {
		return &ConfigError{Field: "Compute.Devices", Value: ve.Value, Reason: ve.Fix}
	}
	return err
}

// validation is the evaluation part of a Trainer: the evaluations on the test split while it
// trains (every Eval.Every steps, on the first Eval.Examples examples) and at its end (the
// whole split, unless Eval.SkipFinal). Its evalProgram is created on first use and then reused.
type validation struct {
	backend compute.Backend
	model   *cifarlib.Model
	store   *model.Store
	devices int
	// every, examples and batchSize are the plan's Eval.Every, Examples and BatchSize.
	every, examples, batchSize int
	// tta is Eval.TTA, the final evaluation's test-time augmentation.
	tta int
	// test is the test split; nil when the run does not evaluate.
	test      *data.Records
	evaluator *evalProgram
	// rt is the run's timeline, nil once the run has ended (an evaluation then records its own),
	// and progs the run's compiled programs, whose evaluator it reuses.
	rt    *runTimeline
	progs *programSet
}

// newValidation is the evaluation part of a run of plan p on devices devices, evaluating on test.
func newValidation(p *plan, backend compute.Backend, m *cifarlib.Model, store *model.Store, devices int, test *data.Records) *validation {
	return &validation{backend: backend, model: m, store: store, devices: devices,
		every: p.Eval.Every, examples: p.Eval.Examples, batchSize: p.Eval.BatchSize, tta: p.Eval.TTA, test: test}
}

// evaluate evaluates the current model on recs, on the run's devices unless opts says otherwise.
func (v *validation) evaluate(ctx context.Context, recs *data.Records, opts EvalOptions) (*EvalResult, error) {
	if recs == nil {
		return nil, &ConfigError{Field: "Eval.SkipFinal", Value: "true", Reason: "the test split was not loaded; pass records to evaluate"}
	}
	if v.evaluator == nil {
		if v.evaluator = v.progs.evaluator; v.evaluator == nil {
			var err error
			if v.evaluator, err = newEvalProgram(v.backend, v.model, v.store); err != nil {
				return nil, err
			}
			v.progs.evaluator = v.evaluator
		}
	}
	v.evaluator.rt = v.rt
	if opts.Devices == 0 {
		opts.Devices = v.devices
	}
	return v.evaluator.Evaluate(ctx, recs, opts)
}

// due says whether the run evaluates after step, of the last step last.
func (v *validation) due(step, last int) bool {
	return v.every > 0 && (step%v.every == 0 || step == last)
}

// point evaluates on the first examples of the test split, for the History.
func (v *validation) point() (*runs.EvalPoint, error) {
	ev, err := v.evaluate(context.Background(), v.test, EvalOptions{BatchSize: v.batchSize, MaxExamples: v.examples,
		purpose: runs.PhaseValidation})
	if err != nil {
		return nil, err
	}
	return &runs.EvalPoint{Examples: ev.Examples, Split: ev.Split, TTA: ev.TTA, Loss: ev.Loss, Accuracy: ev.Accuracy, TopK: ev.TopKAccuracy}, nil
}

// final evaluates on the whole test split, with the run's test-time augmentation.
func (v *validation) final(ctx context.Context) (*EvalResult, error) {
	return v.evaluate(ctx, v.test, EvalOptions{BatchSize: v.batchSize, TTA: v.tta})
}

// liveCurves feeds History points to a GoMLX plotly figure that redraws in the notebook as
// training goes (PlotConfig.Dynamic), and draws the final version when training ends.
type liveCurves struct {
	pc      *plotly.PlotConfig
	history *runs.History
}

// newLiveCurves starts a dynamic plot, pre-filled with the points of a resumed history.
func newLiveCurves(history *runs.History) *liveCurves {
	lc := &liveCurves{pc: plotly.New(), history: history}
	for _, p := range history.PlotPoints() {
		lc.pc.AddPoint(p)
	}
	for range history.Points {
		lc.pc.DynamicSampleDone(false)
	}
	lc.pc.Dynamic()
	return lc
}

// add plots one new point.
func (lc *liveCurves) add(p runs.HistoryPoint) {
	one := runs.History{TopK: lc.history.TopK, Points: []runs.HistoryPoint{p}}
	for _, pt := range one.PlotPoints() {
		lc.pc.AddPoint(pt)
	}
	lc.pc.DynamicSampleDone(false)
}

// finish replaces the transient plot by the final one.
func (lc *liveCurves) finish() { lc.pc.DynamicPlot(true) }

// progressEnabled resolves ProgressAuto: on in a notebook (GoNB, bash_kernel) or when stdout
// is a terminal.
func progressEnabled(mode ProgressMode) bool {
	switch mode {
	case ProgressOn:
		return true
	case ProgressOff:
		return false
	}
	if notebooks.IsNotebook() {
		return true
	}
	fi, err := os.Stdout.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// attachProgress attaches GoMLX's progress bar (terminal table, or a one-line bar in GoNB) to loop.
func attachProgress(loop *train.Loop, mode ProgressMode, extra ...commandline.ExtraMetricFn) bool {
	if !progressEnabled(mode) {
		return false
	}
	commandline.AttachProgressBar(loop, extra...)
	return true
}

// runLog is the logging part of a Trainer: it writes one line, formatted as fmt.Sprintf does,
// to the Env's Log. The parts that have something to say are handed it.
type runLog func(format string, args ...any)

// newRunLog returns the runLog writing to w; a nil w is silent.
func newRunLog(w io.Writer) runLog {
	if w == nil {
		return func(string, ...any) {}
	}
	return func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
}
