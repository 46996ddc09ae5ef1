package training

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// Train trains a model with settings and evaluates it on the test split, in env: the one-call
// entry point for notebooks and the cifarlab CLI. It is NewTrainer followed by Trainer.Run, its
// Warnings said to env.Warn in between.
//
// Cancelling ctx (e.g. on SIGINT) stops training after the current step, saves a checkpoint
// when settings.Checkpoint.Dir is set, and returns the result with Interrupted set and a nil
// error. A head that does not match the dataset stops before the first step with
// *cifarlib.HeadMismatchError (unless settings.Model.Unguarded).
func Train(ctx context.Context, settings Settings, env Env) (*Result, error) {
	t, err := NewTrainer(settings, env)
	if err != nil {
		return nil, err
	}
	if env.Warn != nil {
		for _, w := range t.Warnings() {
			env.Warn(w)
		}
	}
	return t.Run(ctx)
}

// modelFn wraps the model's graph function with the learning-rate schedule, which the cosine
// (or the triangle) builds into the training graph, its numbers fed at run time.
func (t *Trainer) modelFn(scope *model.Scope, spec any, inputs []*graph.Node) []*graph.Node {
	t.rt.building(runs.ProgramTrainStep, 0)
	if g := inputs[0].Graph(); scope.IsTraining(g) {
		t.plan.optimizerPlan(nil).SetLearningRate(t.plan.Optimizer, scope, g)
	}
	if t.transfer != nil {
		return t.transfer.modelFn(t.model, scope, spec, inputs)
	}
	return t.model.ModelFn(scope, spec, inputs)
}

// Settings returns the run's settings as they resolved (a copy of the plan's).
func (t *Trainer) Settings() Settings { return t.plan.Settings }

// Model returns the model being trained.
func (t *Trainer) Model() *cifarlib.Model { return t.model }

// Store returns the GoMLX model.Store holding the variables.
func (t *Trainer) Store() *model.Store { return t.store }

// Backend returns the compute backend.
func (t *Trainer) Backend() compute.Backend { return t.backend }

// Loop returns the underlying GoMLX train.Loop, to attach more hooks before Run.
func (t *Trainer) Loop() *train.Loop { return t.loop }

// History returns the curves recorded so far (including those of the runs before a resume).
func (t *Trainer) History() *runs.History { return t.history }

// GlobalStep returns the number of training steps the model has taken (across resumes).
func (t *Trainer) GlobalStep() int {
	var step int
	_ = backends.TrainCatch(func() error { step = int(optimizer.GetGlobalStep(t.store)); return nil })
	return step
}

// Resumed reports whether the trainer continues from a checkpoint, and at which step.
func (t *Trainer) Resumed() (step int, ok bool) {
	return t.ckpt.resumedAt()
}

// Run trains up to the plan's Run.Steps, then evaluates on the test split (unless
// Eval.SkipFinal).
// It can be called once per Trainer.
//
// Cancelling ctx stops after the current step; the checkpoint (if configured) is saved and the
// result has Interrupted set, with a nil error. Errors from the guards (*HeadMismatchError,
// *LabelRangeError, *DeviceLabelError) stop training and are returned as they are.
func (t *Trainer) Run(ctx context.Context) (result *Result, err error) {
	if t.ran {
		return nil, errors.New("training: Trainer.Run called twice: create a new Trainer (with the same Checkpoint.Dir it resumes)")
	}
	t.ran = true
	cfg := t.plan
	start := t.GlobalStep()
	res := t.newResult(start)
	if res.Resumed {
		t.logf("resumed from checkpoint %s at step %d of %d", cfg.Checkpoint.Dir, start, cfg.Run.Steps)
	}
	t.folder = t.openRunFolder(start)
	res.Timeline = t.rt.tl
	defer func() {
		t.validate.rt = nil // after the run, an evaluation records a timeline of its own
		if result != nil {
			result.Trained.evaluator = t.validate.evaluator // compiled: evaluations after the run reuse it
		}
		t.progs.release(result)
		t.folder.close(result, err)
	}()

	if start < cfg.Run.Steps {
		if err := t.runSteps(ctx, start, res); err != nil {
			return nil, err
		}
	} else {
		t.logf("already at step %d (target %d): nothing to train", start, cfg.Run.Steps)
	}

	stepWatchOf(ctx).done()
	if !res.Interrupted && !cfg.Eval.SkipFinal {
		ev, err := t.validate.final(ctx)
		if err != nil {
			if ctx.Err() != nil {
				res.Interrupted = true
				return res, nil
			}
			return nil, err
		}
		res.Eval = ev
	}
	return res, nil
}

// newResult is the Result of a run starting at step start, before it trains.
func (t *Trainer) newResult(start int) *Result {
	p := t.plan
	res := &Result{Dataset: p.dataset, Model: p.Model.Arch, HeadWidth: t.model.NumClasses, Guarded: !p.Model.Unguarded,
		Precision: p.Compute.Precision, Backend: backends.Name(t.backend), Devices: t.devices.numDevices(), BatchSize: p.Data.BatchSize,
		Data: t.records.provenance, StartStep: start, EndStep: start, TargetStep: p.Run.Steps, CheckpointDir: p.Checkpoint.Dir,
		History: t.history, Trained: &Trained{Model: t.model, Store: t.store, Backend: t.backend}, Transfer: t.Transfer(),
		Recipe: p.Recipe, RecipeSettings: recipeSettings(&p.Settings, p.stepsPerEpoch)}
	_, res.Resumed = t.ckpt.resumedAt()
	res.Warnings = t.Warnings()
	res.ZeroLoss = ZeroLossStats{HeadWidth: t.model.NumClasses, SplitExamples: t.records.train.Len()}
	for i := range t.records.train.Len() {
		if l := t.records.train.Label(i); l < 0 || l >= t.model.NumClasses {
			res.ZeroLoss.SplitOutOfRange++
		}
	}
	return res
}

// runSteps runs GoMLX's loop from global step start to the run's target step and fills res.
func (t *Trainer) runSteps(ctx context.Context, start int, res *Result) error {
	cfg := t.plan
	check := func(*data.HostBatch) error { return nil }
	if !cfg.Model.Unguarded {
		check = t.model.HostGuard()
	}
	inner, err := data.NewDataset("train", t.records.train, data.DatasetOptions{BatchSize: cfg.Data.BatchSize, Shuffle: true, Seed: cfg.Run.Seed,
		Epochs: 0, DropRemainder: true, Augment: cfg.Data.Augment, Augmentation: cfg.Data.Augmentation, Check: check})
	if err != nil {
		return err
	}
	watch := stepWatchOf(ctx)
	watch.starting(cfg.Run.Steps)
	t.steps = &stepDataset{inner: inner, start: start, end: cfg.Run.Steps, ctx: ctx, headWidth: t.model.NumClasses, watch: watch}
	t.attachHooks()

	began := time.Now()
	t.loopStart = began
	err = backends.TrainCatch(func() error { return t.devices.run(ctx, t, cfg.Run.Steps-start) })
	res.Duration = time.Since(began)
	res.EndStep = t.GlobalStep()
	t.devices.count(res, t.steps, res.EndStep-start, cfg.Data.BatchSize)
	t.stepMetrics(res, start)
	t.rt.steps(t.firstStepAt, t.lastStepAt, res.EndStep-start-1)
	if t.live != nil {
		t.live.finish()
	}
	if t.hookErr != nil && err != nil {
		err = t.hookErr // The error of a hook of ours, without GoMLX's wrapping.
	}
	err = backends.TranslateRunError(cifarlib.GuardErrorOf(err), cfg.Data.BatchSize)
	if err != nil {
		// Not saved: the failing step may have left unusable weights (e.g. NaN); a resume
		// continues from the last checkpoint saved (CheckpointEvery).
		return err
	}
	return t.saveTrained(res, start)
}

// stepMetrics fills res with the last step's metrics and the speed of the steps since start.
func (t *Trainer) stepMetrics(res *Result, start int) {
	res.TrainMetricsFrom = t.metricsFrom
	if len(t.lastMetrics) > trainMetricAccuracy {
		res.Loss, res.MovingLoss, res.Accuracy = t.lastMetrics[trainMetricLoss], t.lastMetrics[trainMetricMovingLoss], t.lastMetrics[trainMetricAccuracy]
		if t.plan.TopK() > 0 {
			res.TopK = t.lastMetrics[trainMetricTopK]
		}
	}
	if n := res.EndStep - start; n > 1 && t.lastStepAt.After(t.firstStepAt) {
		elapsed := t.lastStepAt.Sub(t.firstStepAt).Seconds()
		res.StepsPerSecond = float64(n-1) / elapsed
		res.ImagesPerSecond = res.StepsPerSecond * float64(t.plan.Data.BatchSize)
	}
}

// saveTrained saves what was trained since start, also when interrupted: a resume continues
// from there.
func (t *Trainer) saveTrained(res *Result, start int) error {
	if t.ckpt == nil {
		if res.Interrupted {
			t.logf("interrupted at step %d (no checkpoint directory: progress is not saved)", res.EndStep)
		}
		return nil
	}
	if res.EndStep > start {
		if err := t.saveCheckpoint(); err != nil {
			return err
		}
		if res.Interrupted {
			t.logf("interrupted: checkpoint saved at step %d in %s", res.EndStep, t.plan.Checkpoint.Dir)
		}
	}
	return nil
}

// attachHooks registers cifarlib's hooks on GoMLX's loop: the end step for the progress bar,
// history and logging, periodic evaluation and checkpoints, the progress bar and live curves.
func (t *Trainer) attachHooks() {
	cfg := t.plan
	// RunEpochs over a dataset that ends at the target step, so an interruption ends the loop
	// cleanly (its OnEnd hooks run); tell the hooks (progress bar) where it will end.
	t.loop.OnStart("cifarlib: end step", -100, func(loop *train.Loop, _ train.Dataset) error {
		loop.EndStep = cfg.Run.Steps
		if err := t.resumeMetrics(); err != nil {
			return err
		}
		if t.progs.reused { // else the first step compiles first, then says it starts (onExecCreated)
			t.rt.event(t.stepStart())
		}
		return nil
	})
	t.loop.OnStep("cifarlib: history", 50, func(loop *train.Loop, metrics []*tensors.Tensor) error {
		if err := t.onStep(loop, metrics); err != nil {
			t.hookErr = err
			return err
		}
		return nil
	})
	if t.ckpt != nil && cfg.Checkpoint.Every > 0 {
		train.EveryNSteps(t.loop, cfg.Checkpoint.Every, "cifarlib: checkpoint", 100, func(*train.Loop, []*tensors.Tensor) error {
			return t.saveCheckpoint()
		})
	}
	if !cfg.Model.Unguarded {
		cifarlib.AttachDeviceGuard(t.loop)
	}
	attachProgress(t.loop, t.env.Progress)
	if t.env.Plot {
		t.live = newLiveCurves(t.history)
	}
}

// onStep runs after each training step: it keeps the last metrics, records History points,
// evaluates periodically and logs.
func (t *Trainer) onStep(loop *train.Loop, metrics []*tensors.Tensor) error {
	cfg := t.plan
	step := loop.LoopStep + 1 // The step just completed, counted from 1.
	t.lastStepAt = time.Now()
	if t.firstStepAt.IsZero() {
		t.rt.built(runs.ProgramTrainStep) // a data-parallel step compiles in its first call
		t.rt.add(runs.PhaseFirstStep, t.loopStart)
		t.firstStepAt = time.Now()
	}
	t.lastMetrics = t.lastMetrics[:0]
	for _, m := range metrics {
		t.lastMetrics = append(t.lastMetrics, shapes.ConvertTo[float64](m.Value()))
	}
	t.rt.event(Event{Kind: EventStep, Step: step, Steps: cfg.Run.Steps, Loss: t.lastMetrics[trainMetricLoss]})
	last := step == cfg.Run.Steps
	evalNow := t.validate.due(step, cfg.Run.Steps)
	record := step%cfg.Record.HistoryEvery == 0 || last || evalNow
	logNow := step%cfg.Record.LogEvery == 0 || last || evalNow
	if !record && !logNow {
		return nil
	}
	p := runs.HistoryPoint{Step: step, Loss: t.lastMetrics[trainMetricLoss], MovingLoss: t.lastMetrics[trainMetricMovingLoss],
		Accuracy: t.lastMetrics[trainMetricAccuracy], LearningRate: t.learningRate()}
	if cfg.TopK() > 0 {
		p.TopK = t.lastMetrics[trainMetricTopK]
	}
	if n := len(t.lastMetrics); n > trainMetricAccuracy+1 {
		batch := t.lastMetrics[n-1] // trainMetricsFor puts it last
		p.BatchAccuracy = &batch
	}
	if evalNow {
		var err error
		if p.Eval, err = t.validate.point(); err != nil {
			return err
		}
	}
	if logNow {
		msg := fmt.Sprintf("step %d/%d: loss %.4f (avg %.4f), train accuracy %.2f%%", step, cfg.Run.Steps, p.Loss, p.MovingLoss, 100*p.Accuracy)
		if p.Eval != nil {
			msg += fmt.Sprintf(", test accuracy %.2f%% on %d examples", 100*p.Eval.Accuracy, p.Eval.Examples)
		}
		t.logf("%s", msg)
	}
	if !record {
		return nil
	}
	t.history.Add(p)
	t.folder.point(p)
	if t.live != nil {
		t.live.add(p)
	}
	if t.env.OnPoint != nil {
		return t.env.OnPoint(p)
	}
	return nil
}

// learningRate reads the optimizer's learning-rate variable (0 if not created yet).
func (t *Trainer) learningRate() float64 {
	v := t.store.GetVariable(model.JoinPath("/", optimizer.Scope, optimizer.ParamLearningRate))
	if v == nil {
		return 0
	}
	value, err := v.Value()
	if err != nil {
		return 0
	}
	return shapes.ConvertTo[float64](value.Value())
}

// saveCheckpoint saves a checkpoint and the history (no-op without a checkpoint directory).
func (t *Trainer) saveCheckpoint() error {
	if t.ckpt == nil {
		return nil
	}
	t.rt.event(Event{Kind: EventCheckpoint, Step: t.GlobalStep(), Steps: t.plan.Run.Steps})
	defer t.rt.add(runs.PhaseCheckpoint, time.Now())
	if err := t.saveMetricState(); err != nil {
		return err
	}
	return t.ckpt.save(t.store, t.history)
}

// Evaluate evaluates the current model on recs (e.g. the test split).
func (t *Trainer) Evaluate(ctx context.Context, recs *data.Records, opts EvalOptions) (*EvalResult, error) {
	return t.validate.evaluate(ctx, recs, opts)
}

// logf writes one line to the Env's Log, if set.
func (t *Trainer) logf(format string, args ...any) { t.log(format, args...) }
