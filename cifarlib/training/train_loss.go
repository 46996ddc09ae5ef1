package training

// The training loss: the model's guarded loss with label smoothing fed at run time.

import (
	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/train/loss"
)

// trainLoss is the loss of plan p (guard mode), its label smoothing fed at run time
// (optimizers.Scalar), so that a changed label smoothing compiles nothing. Without smoothing the
// loss is the one without it, as before (ProgramKey): the fed smoothing's factors 1 and 0 would
// compute the same numbers, but XLA compiles the graph without them otherwise (another order of
// its sums), and results must stay the same bit for bit. In bf16-mixed precision the value
// stays a constant too (keyed): fed, XLA CPU computes other gradients from it in the last bits.
func trainLoss(p *plan, m *cifarlib.Model, mode cifarlib.GuardMode) loss.LossFn {
	lb := m.Loss().Mode(mode).LabelSmoothing(p.Run.LabelSmoothing)
	if !fedSmoothing(&p.Settings) {
		return lb.Done()
	}
	keep, spread := cifarlib.SmoothingFactors(p.Run.LabelSmoothing, m.NumClasses)
	return lb.LabelSmoothingFed(func(g *graph.Graph, dtype dtypes.DType) (*graph.Node, *graph.Node) {
		return optimizers.Scalar(g, hyperSmoothingKeep, dtype, keep), optimizers.Scalar(g, hyperSmoothingSpread, dtype, spread)
	}).Done()
}

// The fed values of label smoothing (optimizers.Scalar): cifarlib.SmoothingFactors of
// Run.LabelSmoothing.
const (
	hyperSmoothingKeep   = "label_smoothing_keep"
	hyperSmoothingSpread = "label_smoothing_spread"
)

// fedSmoothing says whether a run of s feeds its label smoothing at run time (trainLoss).
func fedSmoothing(s *Settings) bool {
	return s.Run.LabelSmoothing != 0 && s.Compute.Precision != cifarlib.PrecisionBF16Mixed
}
