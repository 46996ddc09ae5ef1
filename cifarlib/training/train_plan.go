package training

import (
	"fmt"
	"math"

	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"
)

// plan is a run's Settings as they resolve, in this one place: validated (Settings.Validate),
// then derived: the transfer source's architecture (ArchOfSource), the head's width, the run's
// steps (from its epochs and the training split's size), the periods of validation, History
// points and log lines. resolve and count read nothing: the Trainer reads the source run and
// loads the data, and hands them what it found. Nothing changes a plan afterwards; the parts of
// a Trainer read it.
type plan struct {
	// Settings are the run's, resolved: Model.Arch an architecture, Model.Head the head's
	// width, Run.Steps the target step, Eval.Every the validations' period (0: none; then
	// Eval.Examples is 0 too), Record.HistoryEvery and LogEvery their periods.
	Settings
	// source is the run transferred from (Transfer.From); nil without one.
	source *sourceRun
	// dataset is Data.Spec's ID.
	dataset string
	// stepsPerEpoch is len(train)/BatchSize when the plan needs it (Run.Epochs, the whitening
	// bias's epochs), else 0.
	stepsPerEpoch int
	// learningRate is the optimizer's.
	learningRate float64
}

// resolve derives the plan of s, validated, and its transfer source (nil without one): the
// model's architecture and head width. The training split's size, when it arrives, completes
// it (count).
func resolve(s Settings, source *sourceRun) (*plan, error) {
	p := &plan{Settings: s, source: source, dataset: s.Data.Spec.ID(), learningRate: learningRate(s.Optimizer)}
	if source != nil {
		if p.Model.Arch == ArchOfSource {
			p.Model.Arch = source.info.Model.Arch
		}
		if p.Model.Arch != source.info.Model.Arch {
			return nil, &ArchMismatchError{Dir: p.Transfer.From, Saved: source.info.Model.Arch, Requested: p.Model.Arch}
		}
	}
	if err := checkWhitening(p.Model.Arch, p.whitenBiasEpochs()); err != nil {
		return nil, err
	}
	p.Model.Head = p.headWidth()
	return p, nil
}

// count completes p with the training split's size, examples: the steps of a run whose length
// is in epochs (and those of the whitening bias's epochs), then the periods that depend on the
// steps.
func (p *plan) count(examples int) error {
	if p.Run.Epochs > 0 || p.whitenBiasEpochs() > 0 {
		if p.stepsPerEpoch = examples / p.Data.BatchSize; p.stepsPerEpoch == 0 {
			return &ConfigError{Field: "Data.BatchSize", Value: fmt.Sprint(p.Data.BatchSize),
				Reason: fmt.Sprintf("an epoch of the %d training examples has no full batch: use a batch size of at most %d", examples, examples)}
		}
	}
	if p.Run.Epochs > 0 {
		p.Run.Steps = int(math.Ceil(p.Run.Epochs * float64(p.stepsPerEpoch)))
	}
	if p.Schedule.Name == optimizers.ScheduleCosine {
		if err := checkWarmup(p.Schedule.WarmupSteps, p.Run.Steps); err != nil {
			return err
		}
	}
	p.countPeriods()
	return nil
}

// countPeriods derives the periods of validation (EvalAuto: about defaultEvals per run, when the
// run evaluates at all), History points and log lines (at most defaultMaxPoints lines).
func (p *plan) countPeriods() {
	e, steps := &p.Eval, p.Run.Steps
	switch {
	case e.Every == EvalAuto && !e.SkipFinal:
		e.Every = (steps + defaultEvals - 1) / defaultEvals
	case e.Every <= 0:
		e.Every = 0
	}
	if e.Every == 0 {
		e.Examples = 0
	}
	r := &p.Record
	if r.HistoryEvery == 0 {
		r.HistoryEvery = max(1, steps/defaultMaxPoints)
	}
	if r.LogEvery == 0 {
		r.LogEvery = max(r.HistoryEvery, (steps+defaultMaxPoints-1)/defaultMaxPoints)
	}
}

// whitenBiasEpochs are the epochs nesterov trains airbench94's whitening bias for (0: all).
func (p *plan) whitenBiasEpochs() int {
	if n, ok := p.Optimizer.(optimizers.Nesterov); ok {
		return n.WhitenBiasEpochs
	}
	return 0
}

// learningRate is o's learning rate (every algorithm has one).
func learningRate(o optimizers.Optimizer) float64 {
	lr, _ := optimizers.Param(o, "LearningRate")
	return lr
}
