package training

import (
	"context"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
)

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
