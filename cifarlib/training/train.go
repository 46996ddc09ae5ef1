package training

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/ml/train/optimizer/cosineschedule"
)

// Train trains a model as described by cfg and evaluates it on the test split: the one-call
// entry point for notebooks and the cifarlab CLI. It is NewTrainer followed by Trainer.Run.
//
// Cancelling ctx (e.g. on SIGINT) stops training after the current step, saves a checkpoint
// when cfg.CheckpointDir is set, and returns the result with Interrupted set and a nil error.
// A head that does not match the dataset stops before the first step with *HeadMismatchError
// (unless cfg.Unguarded).
func Train(ctx context.Context, cfg Config) (*Result, error) {
	t, err := NewTrainer(cfg)
	if err != nil {
		return nil, err
	}
	return t.Run(ctx)
}

// InterruptContext returns a context that is cancelled by the first SIGINT (Ctrl-C in a
// terminal, "interrupt kernel" in GoNB) or SIGTERM: pass it to Train, and an interrupt stops
// training after the current step and saves the checkpoint. After that first signal the
// default handling is restored, so a second Ctrl-C kills the process. Call stop when done to
// release the signals.
func InterruptContext(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	ctx, stop = signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// Trainer is a training run: a cifarlib model on a GoMLX train.Trainer driven by GoMLX's
// train.Loop, with the guarded loss, metrics, checkpoints, progress bar and curves wired in.
// Create it with NewTrainer, then call Run once.
type Trainer struct {
	cfg     Config
	backend compute.Backend
	model   *cifarlib.Model
	store   *model.Store
	trainer *train.Trainer
	loop    *train.Loop
	ckpt    *trainCheckpoint
	history *runs.History
	dist    *trainDevices // nil on one device
	// transfer is the source of a transferred run (training.Config.From); nil otherwise.
	transfer *trainTransfer

	trainRecs, testRecs *data.Records
	provenance          data.Provenance // of trainRecs and testRecs
	evaluator           *Evaluator

	// Per-run state, set by Run and the loop hooks.
	ran         bool
	data        *stepDataset
	live        *liveCurves
	firstStepAt time.Time
	lastStepAt  time.Time
	lastMetrics []float64
	loopStart   time.Time
	finished    bool // Run returned
	hookErr     error
	folder      *runFolder // run.json and TensorBoard events, with a CheckpointDir

	rt    *runTimeline // the run's timeline (timeline.go)
	progs *programSet  // the compiled programs, kept in Config.Programs (programs.go)
}

// NewTrainer validates cfg, loads the data, builds the model, the GoMLX trainer and loop, and
// opens (or resumes from) the checkpoint directory. Nothing is compiled or run yet, except the
// static head check: with the guard on, a head that differs from the dataset's number of
// classes fails here, with *HeadMismatchError.
func NewTrainer(cfg Config) (*Trainer, error) {
	transfer, err := openTransfer(&cfg) // nil without cfg.From
	if err != nil {
		return nil, err
	}
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	t := &Trainer{cfg: cfg, history: &runs.History{TopK: cfg.topK()}, transfer: transfer, rt: newRunTimeline(cfg.TimelineFrom)}

	// Backend and model: the static guard runs before the data is even loaded.
	began := time.Now()
	if t.backend, err = cfg.Programs.backendFor(&cfg); err != nil {
		return nil, devicesConfigError(err)
	}
	t.rt.add(runs.PhaseBackend, began)
	if t.dist, err = newTrainDevices(t.backend, &cfg); err != nil {
		return nil, err
	}
	mb := cifarlib.NewModel(cfg.Spec, cfg.Model).Backend(t.backend).Precision(cfg.Precision)
	if cfg.Head > 0 {
		mb = mb.Head(cfg.Head)
	}
	if t.model, err = mb.Done(); err != nil {
		return nil, err
	}
	if err := t.transfer.check(&cfg, t.model); err != nil {
		return nil, err
	}
	if !cfg.Unguarded {
		if err := staticGuardCheck(t.backend, t.model); err != nil {
			return nil, err
		}
	}

	// Data.
	began = time.Now()
	if t.trainRecs, err = t.loadRecords(cfg.TrainRecords, data.SplitTrain); err != nil {
		return nil, err
	}
	if !cfg.SkipFinalEval || cfg.EvalEvery > 0 {
		if t.testRecs, err = t.loadRecords(cfg.TestRecords, data.SplitTest); err != nil {
			return nil, err
		}
	}
	test := t.testRecs
	if test == nil {
		test = cfg.TestRecords // given, though this run does not evaluate
	}
	t.provenance = data.ProvenanceOf(t.trainRecs, test)
	t.rt.add(runs.PhaseData, began)
	if cfg.TrainRecords == nil {
		t.logf("data: %s", t.provenance) // synthetic or real, where from
	}

	// Store and checkpoint: a checkpoint's parameters are loaded first and compared with cfg.
	t.store = model.NewStore()
	if err := t.store.SetRNGStateFromSeed(cfg.Seed); err != nil {
		return nil, fmt.Errorf("cifarlib: seeding the model's random state: %w", err)
	}
	if cfg.CheckpointDir != "" {
		if t.ckpt, err = openTrainCheckpoint(t.store, &cfg); err != nil {
			return nil, err
		}
		for _, name := range t.ckpt.setAside {
			t.logf("checkpoint %s in %s was incomplete (an interrupted save): set aside as %s.{json,bin}%s",
				name, cfg.CheckpointDir, name, incompleteCheckpointSuffix)
		}
		if t.ckpt.resumed != nil {
			if t.history, err = runs.LoadHistory(cfg.CheckpointDir); err != nil {
				return nil, err
			}
			t.history.TopK = cfg.topK()
		}
		t.noteImported()
	}
	if err := t.usePrograms(); err != nil {
		return nil, err
	}
	if err := t.startTransfer(); err != nil {
		return nil, err
	}
	t.adoptInput()
	info := checkpointInfoFromConfig(&cfg)
	info.Input = t.model.Input
	info.setStoreParams(t.store)

	err = backends.TrainCatch(func() error {
		opt, err := trainOptimizer(&cfg)
		if err != nil {
			return err
		}
		mode := cifarlib.GuardAll
		if cfg.Unguarded {
			mode = cifarlib.GuardOff
		}
		if t.trainer = t.progs.trainer; t.trainer == nil {
			t.trainer = train.NewTrainer(t.backend, t.store, t.modelFn, t.model.LossFn(mode), t.transfer.wrapOptimizer(opt),
				trainMetricsFor(cfg.topK(), cfg.Unguarded, t.model.NumClasses), evalMetricsFor(cfg.topK()))
			t.progs.keep(t.trainer)
		}
		t.loop = train.NewLoop(t.trainer)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// loadRecords returns given when set (checking its Spec), else loads the split from
// cfg.DataDir, or from SyntheticDir(cfg.DataDir) where Prepare puts synthetic data when the
// folder holds no real data (the data's SYNTHETIC DATA line goes to cfg.Log).
func (t *Trainer) loadRecords(given *data.Records, split data.Split) (*data.Records, error) {
	spec, dir := t.cfg.Spec, t.cfg.DataDir
	if given != nil {
		if given.Spec.ID() != spec.ID() || given.Spec.NumClasses != spec.NumClasses {
			return nil, &ConfigError{Field: "TrainRecords/TestRecords", Value: given.Spec.ID(),
				Reason: fmt.Sprintf("the records are %s but Spec is %s: load them with the same Spec", given.Spec, spec)}
		}
		return given, nil
	}
	recs, err := LoadSplitOrSynthetic(dir, spec, split)
	switch {
	case err != nil:
	case split != data.SplitTrain: // one note per run, for the training split
	case filepath.Dir(filepath.Dir(recs.Source)) == filepath.Clean(data.SyntheticDir(dir)):
		t.logf("%s", data.StateOf(dir, spec)) // "SYNTHETIC DATA: ...", as a notebook's first cell says it
	}
	return recs, err
}

// staticGuardCheck runs the guarded loss's static check (head width against the dataset's
// classes) on a graph that is built but never run, so a mismatched head fails before anything
// is loaded or compiled, with the guard's own *HeadMismatchError.
func staticGuardCheck(backend compute.Backend, m *cifarlib.Model) error {
	return backends.TrainCatch(func() error {
		g := graph.NewGraph(backend, "cifarlib_static_guard")
		defer g.Finalize()
		logits := graph.Parameter(g, "logits", shapes.Make(dtypes.Float32, 1, m.NumClasses))
		labels := graph.Parameter(g, "labels", shapes.Make(dtypes.Int32, 1, 1))
		m.LossFn(cifarlib.GuardStatic)([]*graph.Node{labels}, []*graph.Node{logits})
		return nil
	})
}

// trainOptimizer builds the GoMLX optimizer named in c.
func trainOptimizer(c *Config) (optimizer.Interface, error) {
	switch c.Optimizer {
	case "sgd":
		return optimizer.StochasticGradientDescent().WithLearningRate(c.LearningRate).WithDecay(false).Done(), nil
	case "adam":
		return optimizer.Adam().LearningRate(c.LearningRate).Done(), nil
	case "adamw":
		return optimizer.Adam().LearningRate(c.LearningRate).WeightDecay(c.WeightDecay).Done(), nil
	case "adamax":
		return optimizer.Adam().Adamax().LearningRate(c.LearningRate).Done(), nil
	case "rmsprop":
		return optimizer.RMSProp().LearningRate(c.LearningRate).Done(), nil
	}
	return nil, &ConfigError{Field: "Optimizer", Value: c.Optimizer, Reason: "unknown optimizer"}
}

// modelFn wraps the model's graph function with the learning-rate schedule, which GoMLX's
// cosineschedule builds into the training graph.
func (t *Trainer) modelFn(scope *model.Scope, spec any, inputs []*graph.Node) []*graph.Node {
	t.rt.building(runs.ProgramTrainStep)
	if t.cfg.Schedule == ScheduleCosine {
		cosineschedule.New(scope, inputs[0].Graph(), dtypes.Float32).
			LearningRate(t.cfg.LearningRate).
			MinLearningRate(t.cfg.MinLearningRate).
			WarmUpSteps(t.cfg.WarmupSteps).
			PeriodSteps(t.cfg.Steps - t.cfg.WarmupSteps).
			Done()
	}
	if t.transfer != nil {
		return t.transfer.modelFn(t.model, scope, spec, inputs)
	}
	return t.model.ModelFn(scope, spec, inputs)
}

// Config returns the configuration with its defaults filled in.
func (t *Trainer) Config() Config { return t.cfg }

// Model returns the model being trained.
func (t *Trainer) Model() *cifarlib.Model { return t.model }

// Store returns the GoMLX model.Store holding the variables.
func (t *Trainer) Store() *model.Store { return t.store }

// Backend returns the compute backend.
func (t *Trainer) Backend() compute.Backend { return t.backend }

// GoMLXTrainer returns the underlying GoMLX train.Trainer.
func (t *Trainer) GoMLXTrainer() *train.Trainer { return t.trainer }

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
	if t.ckpt == nil || t.ckpt.resumed == nil {
		return 0, false
	}
	return t.ckpt.resumed.Step, true
}

// Run trains up to Config.Steps, then evaluates on the test split (unless SkipFinalEval).
// It can be called once per Trainer.
//
// Cancelling ctx stops after the current step; the checkpoint (if configured) is saved and the
// result has Interrupted set, with a nil error. Errors from the guards (*HeadMismatchError,
// *LabelRangeError, *DeviceLabelError) stop training and are returned as they are.
func (t *Trainer) Run(ctx context.Context) (result *Result, err error) {
	if t.ran {
		return nil, errors.New("cifarlib: Trainer.Run called twice: create a new Trainer (with the same CheckpointDir it resumes)")
	}
	t.ran = true
	cfg := &t.cfg
	start := t.GlobalStep()
	res := &Result{Dataset: cfg.Spec.ID(), Model: cfg.Model, HeadWidth: t.model.NumClasses, Guarded: !cfg.Unguarded, Precision: cfg.Precision,
		Backend: backends.Name(t.backend), Devices: t.dist.numDevices(), BatchSize: cfg.BatchSize, Data: t.provenance, StartStep: start, EndStep: start, TargetStep: cfg.Steps,
		Resumed: t.ckpt != nil && t.ckpt.resumed != nil, CheckpointDir: cfg.CheckpointDir, History: t.history,
		Trained: &Trained{Model: t.model, Store: t.store, Backend: t.backend}, Transfer: t.Transfer()}
	res.ZeroLoss = ZeroLossStats{HeadWidth: t.model.NumClasses, SplitExamples: t.trainRecs.Len()}
	for i := range t.trainRecs.Len() {
		if l := t.trainRecs.Label(i); l < 0 || l >= t.model.NumClasses {
			res.ZeroLoss.SplitOutOfRange++
		}
	}
	if res.Resumed {
		t.logf("resumed from checkpoint %s at step %d of %d", cfg.CheckpointDir, start, cfg.Steps)
	}
	t.folder = t.openRunFolder(start)
	res.Timeline = t.rt.tl
	defer func() {
		t.finished = true
		if result != nil {
			result.Trained.evaluator = t.evaluator // compiled: evaluations after the run reuse it
		}
		t.progs.release(result)
		t.folder.close(result, err)
	}()

	if start < cfg.Steps {
		if err := t.runSteps(ctx, start, res); err != nil {
			return nil, err
		}
	} else {
		t.logf("already at step %d (target %d): nothing to train", start, cfg.Steps)
	}

	if !res.Interrupted && !cfg.SkipFinalEval {
		ev, err := t.Evaluate(ctx, t.testRecs, EvalOptions{BatchSize: cfg.EvalBatchSize})
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

// runSteps runs GoMLX's loop from global step start to cfg.Steps and fills res.
func (t *Trainer) runSteps(ctx context.Context, start int, res *Result) error {
	cfg := &t.cfg
	check := func(*data.HostBatch) error { return nil }
	if !cfg.Unguarded {
		check = t.model.HostGuard()
	}
	inner, err := data.NewDataset("train", t.trainRecs, data.DatasetOptions{BatchSize: cfg.BatchSize, Shuffle: true, Seed: cfg.Seed,
		Epochs: 0, DropRemainder: true, Augment: cfg.Augment, Check: check})
	if err != nil {
		return err
	}
	t.data = &stepDataset{inner: inner, start: start, end: cfg.Steps, ctx: ctx, headWidth: t.model.NumClasses}
	t.attachHooks()

	began := time.Now()
	t.loopStart = began
	err = backends.TrainCatch(func() error {
		if t.dist != nil {
			return t.runDistributed(ctx, cfg.Steps-start)
		}
		_, err := t.loop.RunEpochs(t.data, 1)
		return err
	})
	res.Duration = time.Since(began)
	res.EndStep = t.GlobalStep()
	res.Interrupted = t.data.interrupted
	res.ZeroLoss.Seen, res.ZeroLoss.OutOfRange = t.data.seen, t.data.outOfRange
	if t.dist != nil { // The distributed dataset reads ahead: count what was trained.
		res.Interrupted = res.Interrupted || t.dist.interrupted
		res.ZeroLoss.Seen, res.ZeroLoss.OutOfRange = t.dist.zeroLossCounts(res.EndStep-start, cfg.BatchSize)
	}
	if len(t.lastMetrics) > trainMetricAccuracy {
		res.Loss, res.MovingLoss, res.Accuracy = t.lastMetrics[trainMetricLoss], t.lastMetrics[trainMetricMovingLoss], t.lastMetrics[trainMetricAccuracy]
		if cfg.topK() > 0 {
			res.TopK = t.lastMetrics[trainMetricTopK]
		}
	}
	t.rt.steps(t.firstStepAt, t.lastStepAt, res.EndStep-start-1)
	if n := res.EndStep - start; n > 1 && t.lastStepAt.After(t.firstStepAt) {
		elapsed := t.lastStepAt.Sub(t.firstStepAt).Seconds()
		res.StepsPerSecond = float64(n-1) / elapsed
		res.ImagesPerSecond = res.StepsPerSecond * float64(cfg.BatchSize)
	}
	if t.live != nil {
		t.live.finish()
	}
	if t.hookErr != nil && err != nil {
		err = t.hookErr // The error of a hook of ours, without GoMLX's wrapping.
	}
	err = backends.TranslateRunError(cifarlib.GuardErrorOf(err), cfg.BatchSize)
	if err != nil {
		// Not saved: the failing step may have left unusable weights (e.g. NaN); a resume
		// continues from the last checkpoint saved (CheckpointEvery).
		return err
	}
	// Save what was trained, also when interrupted: a resume continues from there.
	if t.ckpt != nil && res.EndStep > start {
		if err := t.saveCheckpoint(); err != nil {
			return err
		}
		if res.Interrupted {
			t.logf("interrupted: checkpoint saved at step %d in %s", res.EndStep, cfg.CheckpointDir)
		}
	}
	if res.Interrupted && t.ckpt == nil {
		t.logf("interrupted at step %d (no checkpoint directory: progress is not saved)", res.EndStep)
	}
	return nil
}

// attachHooks registers cifarlib's hooks on GoMLX's loop: the end step for the progress bar,
// history and logging, periodic evaluation and checkpoints, the progress bar and live curves.
func (t *Trainer) attachHooks() {
	cfg := &t.cfg
	// RunEpochs over a dataset that ends at cfg.Steps, so an interruption ends the loop
	// cleanly (its OnEnd hooks run); tell the hooks (progress bar) where it will end.
	t.loop.OnStart("cifarlib: end step", -100, func(loop *train.Loop, _ train.Dataset) error {
		loop.EndStep = cfg.Steps
		return nil
	})
	t.loop.OnStep("cifarlib: history", 50, func(loop *train.Loop, metrics []*tensors.Tensor) error {
		if err := t.onStep(loop, metrics); err != nil {
			t.hookErr = err
			return err
		}
		return nil
	})
	if t.ckpt != nil && cfg.CheckpointEvery > 0 {
		train.EveryNSteps(t.loop, cfg.CheckpointEvery, "cifarlib: checkpoint", 100, func(*train.Loop, []*tensors.Tensor) error {
			return t.saveCheckpoint()
		})
	}
	if !cfg.Unguarded {
		cifarlib.AttachDeviceGuard(t.loop)
	}
	attachProgress(t.loop, cfg.Progress)
	if cfg.Plot {
		t.live = newLiveCurves(t.history)
	}
}

// onStep runs after each training step: it keeps the last metrics, records History points,
// evaluates periodically and logs.
func (t *Trainer) onStep(loop *train.Loop, metrics []*tensors.Tensor) error {
	cfg := &t.cfg
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
	last := step == cfg.Steps
	evalNow := cfg.EvalEvery > 0 && (step%cfg.EvalEvery == 0 || last)
	record := step%cfg.HistoryEvery == 0 || last || evalNow
	logNow := step%cfg.LogEvery == 0 || last || evalNow
	if !record && !logNow {
		return nil
	}
	p := runs.HistoryPoint{Step: step, Loss: t.lastMetrics[trainMetricLoss], MovingLoss: t.lastMetrics[trainMetricMovingLoss],
		Accuracy: t.lastMetrics[trainMetricAccuracy], LearningRate: t.learningRate()}
	if cfg.topK() > 0 {
		p.TopK = t.lastMetrics[trainMetricTopK]
	}
	if n := len(t.lastMetrics); n > trainMetricAccuracy+1 {
		batch := t.lastMetrics[n-1] // trainMetricsFor puts it last
		p.BatchAccuracy = &batch
	}
	if evalNow {
		ev, err := t.Evaluate(context.Background(), t.testRecs, EvalOptions{BatchSize: cfg.EvalBatchSize, MaxExamples: cfg.EvalExamples,
			purpose: runs.PhaseValidation})
		if err != nil {
			return err
		}
		p.Eval = &runs.EvalPoint{Examples: ev.Examples, Loss: ev.Loss, Accuracy: ev.Accuracy, TopK: ev.TopKAccuracy}
	}
	if logNow {
		msg := fmt.Sprintf("step %d/%d: loss %.4f (avg %.4f), train accuracy %.2f%%", step, cfg.Steps, p.Loss, p.MovingLoss, 100*p.Accuracy)
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
	if cfg.OnPoint != nil {
		return cfg.OnPoint(p)
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
	defer t.rt.add(runs.PhaseCheckpoint, time.Now())
	return t.ckpt.save(t.store, t.history)
}

// SaveCheckpoint saves a checkpoint of the current state now. It fails when the config has
// no CheckpointDir.
func (t *Trainer) SaveCheckpoint() error {
	if t.ckpt == nil {
		return &ConfigError{Field: "CheckpointDir", Value: `""`, Reason: "set a checkpoint directory to save checkpoints"}
	}
	return t.saveCheckpoint()
}

// Evaluate evaluates the current model on recs (e.g. the test split).
func (t *Trainer) Evaluate(ctx context.Context, recs *data.Records, opts EvalOptions) (*EvalResult, error) {
	if recs == nil {
		return nil, &ConfigError{Field: "SkipFinalEval", Value: "true", Reason: "the test split was not loaded; pass records to evaluate"}
	}
	if t.evaluator == nil {
		if t.evaluator = t.progs.evaluator; t.evaluator == nil {
			var err error
			if t.evaluator, err = NewEvaluator(t.backend, t.model, t.store); err != nil {
				return nil, err
			}
			t.progs.evaluator = t.evaluator
		}
	}
	t.evaluator.rt = t.rt
	if t.finished {
		t.evaluator.rt = nil // after the run: a timeline of its own
	}
	if opts.Devices == 0 {
		opts.Devices = t.dist.numDevices()
	}
	return t.evaluator.Evaluate(ctx, recs, opts)
}

// logf writes one line to cfg.Log, if set.
func (t *Trainer) logf(format string, args ...any) {
	if t.cfg.Log != nil {
		fmt.Fprintf(t.cfg.Log, format+"\n", args...)
	}
}
