package training

import (
	"fmt"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
)

// Trainer is a training run: a cifarlib model on a GoMLX train.Trainer driven by GoMLX's
// train.Loop, with the guarded loss, metrics, checkpoints, progress bar and curves wired in.
// Create it with NewTrainer, then call Run once.
//
// It is assembled from parts, each reading the run's plan (its Settings resolved once) and its
// Env: the devices (stepRunner), the data (trainRecords), checkpointing and resume
// (trainCheckpoint), the transfer (trainTransfer), evaluation and validation (validation),
// logging (runLog), the timeline (runTimeline) and the compiled programs (programSet).
type Trainer struct {
	plan     *plan
	env      Env
	log      runLog
	backend  compute.Backend
	devices  stepRunner
	model    *cifarlib.Model
	records  *trainRecords
	store    *model.Store
	ckpt     *trainCheckpoint // nil without a checkpoint directory
	history  *runs.History
	transfer *trainTransfer // nil unless the run transfers (Transfer.From) or freezes
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
	metricsFrom int        // the step the training metrics count from (Result.TrainMetricsFrom)
	folder      *runFolder // run.json and TensorBoard events, with a checkpoint directory

	rt    *runTimeline // the timeline part: where the run's time goes (timeline.go)
	progs *programSet  // the compiled programs, kept in Env.Programs (programs.go)
}

// NewTrainer validates settings, resolves them (with the transfer source's, when there is
// one), creates the backend and builds the model, loads the data, builds the GoMLX trainer and
// loop, and opens (or resumes from) the checkpoint directory. Nothing is compiled or run yet,
// except the static head check: with the guard on, a head that differs from the dataset's
// number of classes fails before the data is loaded, with *cifarlib.HeadMismatchError.
func NewTrainer(settings Settings, env Env) (*Trainer, error) {
	if err := settings.Validate(); err != nil {
		return nil, err
	}
	source, err := readTransferSource(settings.Transfer.From)
	if err != nil {
		return nil, err
	}
	p, err := resolve(settings, source)
	if err != nil {
		return nil, err
	}
	t := &Trainer{plan: p, env: env, log: newRunLog(env.Log), rt: newRunTimeline(env.Clock)}
	t.rt.onEvent = env.OnEvent
	if env.Backend == nil {
		t.rt.event(Event{Kind: EventBackend})
	}
	began := time.Now()
	if t.backend, t.devices, err = openDevices(p, env); err != nil {
		return nil, err
	}
	t.rt.backend = t.backend
	t.rt.add(runs.PhaseBackend, began)
	if t.model, err = buildModel(p, t.backend); err != nil { // the static guard runs before the data is loaded
		return nil, err
	}
	if t.records, err = loadTrainRecords(p, env, t.log, t.rt); err != nil {
		return nil, err
	}
	if err := p.count(t.records.train.Len()); err != nil {
		return nil, err
	}
	if err := t.open(p); err != nil {
		return nil, err
	}
	return t, nil
}

// open opens what the run of plan p holds: its Store (seeded), its checkpoints (a checkpoint's
// parameters are loaded first and compared with the plan), its programs, the whitening filters,
// the transfer, the validation and GoMLX's trainer and loop.
func (t *Trainer) open(p *plan) (err error) {
	t.store = model.NewStore()
	if err := t.store.SetRNGStateFromSeed(p.Run.Seed); err != nil {
		return fmt.Errorf("training: seeding the model's random state: %w", err)
	}
	if t.ckpt, t.history, err = openCheckpoints(p, t.model, t.store, t.log); err != nil {
		return err
	}
	if err := t.usePrograms(); err != nil {
		return err
	}
	_, resumed := t.ckpt.resumedAt()
	if err := initWhitening(p, t.model, t.store, t.records.train, resumed || t.ckpt.isImport(), t.progs); err != nil {
		return err
	}
	if t.transfer, err = newTrainTransfer(p, t.store, resumed, t.log); err != nil {
		return err
	}
	t.validate = newValidation(p, t.backend, t.model, t.store, t.devices.numDevices(), t.records.test)
	t.validate.rt, t.validate.progs = t.rt, t.progs
	if t.trainer, err = newGoMLXTrainer(p, t); err != nil {
		return err
	}
	t.loop = train.NewLoop(t.trainer)
	return nil
}

// Env returns the run's Env.
func (t *Trainer) Env() Env { return t.env }

// Warnings says, before the run trains, what makes it learn nothing though it trains (e.g. a
// run shorter than the lookahead's period); Result.Warnings and its summary say it again.
func (t *Trainer) Warnings() []string { return t.plan.warnings() }
