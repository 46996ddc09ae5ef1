package training

import (
	"context"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Trained is a model together with its weights on a backend: what Train returns (embedded in
// Result) and LoadCheckpoint loads (embedded in LoadedCheckpoint), so that later code, or
// a later notebook cell, computes with the trained model in one call.
type Trained struct {
	// Model is the architecture and head.
	Model *cifarlib.Model
	// Store holds the trained variables.
	Store *model.Store
	// Backend is where they live and where Logits, Losses and Evaluate run.
	Backend compute.Backend
	// EvaluateWith, when set, evaluates in Evaluate's place: package nb sets it so that a
	// notebook's lab process evaluates the run, with the backend, data and compiled programs it
	// keeps from cell to cell.
	EvaluateWith func(ctx context.Context, recs *data.Records, opts EvalOptions) (*EvalResult, error)

	// evaluator is the Trainer's, whose evaluation program is compiled (nil: Evaluate makes one).
	evaluator *evalProgram
}

// Logits runs the trained model on images (float32 [n, 32, 32, 3]) and returns the logits
// [n, HeadWidth]: PyTorch's `model(x)`.
func (t *Trained) Logits(images *tensors.Tensor) (*tensors.Tensor, error) {
	return t.Model.Logits(t.Backend, t.Store, images)
}

// Losses returns the loss of every example of b under GoMLX's plain loss, and what the guarded
// loss makes of the same batch (see ExampleLosses).
func (t *Trained) Losses(b *data.Batch) (*cifarlib.ExampleLosses, error) {
	return t.Model.Losses(t.Backend, t.Store, b)
}

// Evaluate evaluates the trained model on recs (accuracy, loss, per-class accuracy). The model
// of a Result evaluates with the evaluation program its run compiled (for the same batch size,
// nothing is compiled again).
func (t *Trained) Evaluate(ctx context.Context, recs *data.Records, opts EvalOptions) (*EvalResult, error) {
	if t.EvaluateWith != nil {
		return t.EvaluateWith(ctx, recs, opts)
	}
	if e := t.evaluator; e != nil && e.store == t.Store {
		e.rt = nil // a timeline of its own
		return e.Evaluate(ctx, recs, opts)
	}
	return Evaluate(ctx, t.Backend, t.Model, t.Store, recs, opts)
}
