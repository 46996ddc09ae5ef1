package training

import (
	"fmt"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/loss"
)

// Trainer is a training run: a cifarlib model on a GoMLX train.Trainer driven by GoMLX's
// train.Loop, with the guarded loss, metrics, checkpoints, progress bar and curves wired in.
// Create it with NewTrainer, then call Run once.
//
// It is assembled from parts, each reading the run's plan (its Config resolved once): the
// devices (stepRunner), the data (trainRecords), checkpointing and resume (trainCheckpoint),
// the transfer (trainTransfer), evaluation and validation (validation), logging (runLog), the
// timeline (runTimeline) and the compiled programs (programSet).
type Trainer struct {
	plan     *plan
	log      runLog
	backend  compute.Backend
	devices  stepRunner
	model    *cifarlib.Model
	records  *trainRecords
	store    *model.Store
	ckpt     *trainCheckpoint // nil without a CheckpointDir
	history  *runs.History
	transfer *trainTransfer // nil unless the run transfers (Config.From) or freezes
	validate *validation
	trainer  *train.Trainer
	loop     *train.Loop

	// Per-run state, set by Run and the loop hooks.
	ran         bool
	steps       *stepDataset
	live        *liveCurves
	firstStepAt time.Time
	lastStepAt  time.Time
	lastMetrics []float64
	loopStart   time.Time
	hookErr     error
	folder      *runFolder // run.json and TensorBoard events, with a CheckpointDir

	rt    *runTimeline // the timeline part: where the run's time goes (timeline.go)
	progs *programSet  // the compiled programs, kept in Config.Programs (programs.go)
}

// NewTrainer validates cfg, loads the data, builds the model, the GoMLX trainer and loop, and
// opens (or resumes from) the checkpoint directory. Nothing is compiled or run yet, except the
// static head check: with the guard on, a head that differs from the dataset's number of
// classes fails here, with *HeadMismatchError.
func NewTrainer(cfg Config) (*Trainer, error) {
	t := &Trainer{log: newRunLog(cfg.Log), rt: newRunTimeline(cfg.TimelineFrom)}
	t.rt.onEvent = cfg.OnEvent
	p, err := resolve(cfg, t.loadRecords) // loads the data first when the plan depends on its size
	if err != nil {
		return nil, err
	}
	t.plan = p
	if p.Backend == nil {
		t.rt.event(Event{Kind: EventBackend})
	}
	began := time.Now()
	if t.backend, t.devices, err = openDevices(p); err != nil {
		return nil, err
	}
	t.rt.add(runs.PhaseBackend, began)
	if t.model, err = buildModel(p, t.backend); err != nil { // the static guard runs before the data is loaded
		return nil, err
	}
	if t.records == nil {
		if _, err := t.loadRecords(&p.Config); err != nil {
			return nil, err
		}
	}
	t.store = model.NewStore()
	if err := t.store.SetRNGStateFromSeed(p.Seed); err != nil {
		return nil, fmt.Errorf("training: seeding the model's random state: %w", err)
	}
	// A checkpoint's parameters are loaded first and compared with the plan.
	if t.ckpt, t.history, err = openCheckpoints(p, t.model, t.store, t.log); err != nil {
		return nil, err
	}
	if err := t.usePrograms(); err != nil {
		return nil, err
	}
	_, resumed := t.ckpt.resumedAt()
	if err := t.initWhitening(resumed); err != nil {
		return nil, err
	}
	if t.transfer, err = newTrainTransfer(p, t.store, resumed, t.log); err != nil {
		return nil, err
	}
	t.validate = newValidation(p, t.backend, t.model, t.store, t.devices.numDevices(), t.records.test)
	t.validate.rt, t.validate.progs = t.rt, t.progs
	if t.trainer, err = newGoMLXTrainer(p, t); err != nil {
		return nil, err
	}
	t.loop = train.NewLoop(t.trainer)
	return t, nil
}

// Warnings says, before the run trains, what makes it learn nothing though it trains (e.g. a
// run shorter than the lookahead's period); Result.Warnings and its summary say it again.
func (t *Trainer) Warnings() []string { return t.plan.warnings() }

// initWhitening sets airbench94's whitening filters from the first training images
// (cifarlib.Model.InitWhitening, airbench's init_whitening_conv) at the start of a fresh run. A
// resumed or imported run keeps its own, and a transfer carries its source's.
func (t *Trainer) initWhitening(resumed bool) error {
	if t.model.Arch != cifarlib.ArchAirbench94 || resumed || t.plan.source != nil || t.ckpt != nil && t.ckpt.imported != nil {
		return nil
	}
	return t.model.InitWhitening(t.store, t.records.train)
}

// loadRecords loads the splits of c into t.records (see loadTrainRecords), timed on the
// timeline, and returns the number of training examples (a trainSize for resolve).
func (t *Trainer) loadRecords(c *Config) (int, error) {
	if c.TrainRecords == nil || c.TestRecords == nil && (!c.SkipFinalEval || c.EvalEvery > 0) {
		t.rt.event(Event{Kind: EventData})
	}
	began := time.Now()
	recs, err := loadTrainRecords(c, t.log)
	if err != nil {
		return 0, err
	}
	t.records = recs
	t.rt.add(runs.PhaseData, began)
	return recs.train.Len(), nil
}

// newGoMLXTrainer builds GoMLX's train.Trainer of t for plan p: t's model function, the guarded
// loss (unless Unguarded), the optimizer and the metrics.
func newGoMLXTrainer(p *plan, t *Trainer) (trainer *train.Trainer, err error) {
	err = backends.TrainCatch(func() error {
		opt, err := newOptimizer(p, t.transfer)
		if err != nil {
			return err
		}
		mode := cifarlib.GuardAll
		if p.Unguarded {
			mode = cifarlib.GuardOff
		}
		if trainer = t.progs.trainer; trainer == nil { // compiled by an earlier run (Config.Programs)
			trainer = train.NewTrainer(t.backend, t.store, t.modelFn, trainLoss(p, t.model, mode), opt,
				trainMetricsFor(p.topK(), p.Unguarded, t.model.NumClasses), evalMetricsFor(p.topK()))
			t.progs.keep(trainer)
		}
		return nil
	})
	return trainer, err
}

// trainLoss is the loss of plan p (guard mode), its label smoothing fed at run time
// (train_hyper.go), so that a changed LabelSmoothing compiles nothing. Without smoothing the
// loss is the one without it, as before (ProgramKey.LabelSmoothing): the fed smoothing's
// factors 1 and 0 would compute the same numbers, but XLA compiles the graph without them
// otherwise (another order of its sums), and results must stay the same bit for bit. In
// bf16-mixed precision the value stays a constant too (ProgramKey.ConstantSmoothing): fed, XLA
// CPU computes other gradients from it in the last bits.
func trainLoss(p *plan, m *cifarlib.Model, mode cifarlib.GuardMode) loss.LossFn {
	lb := m.Loss().Mode(mode).LabelSmoothing(p.LabelSmoothing)
	if !fedSmoothing(&p.Config) {
		return lb.Done()
	}
	keep, spread := cifarlib.SmoothingFactors(p.LabelSmoothing, m.NumClasses)
	return lb.LabelSmoothingFed(func(g *graph.Graph, dtype dtypes.DType) (*graph.Node, *graph.Node) {
		return fedScalar(g, hyperSmoothingKeep, dtype, keep), fedScalar(g, hyperSmoothingSpread, dtype, spread)
	}).Done()
}

// fedSmoothing says whether a run of c feeds its label smoothing at run time (trainLoss).
func fedSmoothing(c *Config) bool {
	return c.LabelSmoothing != 0 && c.Precision != cifarlib.PrecisionBF16Mixed
}
