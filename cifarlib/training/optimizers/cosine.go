package optimizers

// The cosine learning-rate schedule (ScheduleCosine): GoMLX's cosineschedule with its settings
// fed at run time.

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/ml/train/optimizer/cosineschedule"
)

// The cosine schedule's fed values (fed.go).
const (
	hyperCosineWarmupSteps = "cosine_warmup_steps"
	hyperCosineWarmupInv   = "cosine_warmup_inv" // 1/WarmupSteps, 0 without warm-up
	hyperCosinePeriodInv   = "cosine_period_inv" // 1/(Steps-WarmupSteps)
	hyperCosineSpan        = "cosine_span"       // LearningRate-MinLearningRate
	hyperCosineHalfSpan    = "cosine_half_span"  // (LearningRate-MinLearningRate)/2, in float32
	hyperMinLearningRate   = "min_learning_rate"
)

// cosineSchedule is GoMLX's cosineschedule (gomlx v0.28.16, ml/train/optimizer/cosineschedule:
// New(...).LearningRate(lr).MinLearningRate(min).WarmUpSteps(w).PeriodSteps(steps-w).Done()), the
// same operations in the same order, its counter in the same variable, but with its numbers fed
// at run time instead of built in as constants (graph.DivScalar's reciprocal included, and
// the constants XLA folds folded as it does), and its warm-up always in the graph: without warm-up (0 steps) the warm-up's branch is never
// taken, so the rate is the one without it.
type cosineSchedule struct {
	learningRate, minLearningRate float64
	warmupSteps, periodSteps      int
}

// cosine is the cosine schedule of plan p for optimizer o.
func (p Plan) cosine(o Optimizer) cosineSchedule {
	return cosineSchedule{learningRate: learningRate(o), minLearningRate: max(p.Schedule.MinLearningRate, 0),
		warmupSteps: p.Schedule.WarmupSteps, periodSteps: max(p.Steps-p.Schedule.WarmupSteps, 1)}
}

// fed returns the values the schedule's graph reads at run time.
func (c cosineSchedule) fed() Values {
	h := Values{hyperCosineWarmupSteps: float64(c.warmupSteps), hyperCosineWarmupInv: 0,
		hyperCosinePeriodInv: 1.0 / float64(c.periodSteps), hyperCosineSpan: c.learningRate - c.minLearningRate,
		hyperMinLearningRate: c.minLearningRate}
	h[hyperCosineHalfSpan] = float64(float32(0.5) * float32(h[hyperCosineSpan]))
	if c.warmupSteps > 0 {
		h[hyperCosineWarmupInv] = 1.0 / float64(c.warmupSteps)
	}
	return h
}

// setLearningRate sets GoMLX's learning-rate variable in g (a training graph) to the schedule's
// rate at the step being taken.
func (c cosineSchedule) setLearningRate(scope *model.Scope, g *graph.Graph) {
	const dtype = dtypes.Float32
	h := c.fed()
	fed := func(name string) *graph.Node { return Scalar(g, name, dtype, h[name]) }
	cosineScope := scope.Store().Scope(model.JoinPath(optimizer.Scope, cosineschedule.Scope))
	step := graph.MinusOne(optimizer.IncrementCounter(cosineScope, g, "step", dtype)) // the value before the increment
	adjusted := graph.Sub(step, fed(hyperCosineWarmupSteps))
	cycle := graph.Mul(adjusted, fed(hyperCosinePeriodInv))
	cycle = graph.Sub(cycle, graph.Floor(cycle)) // the fraction of the period, in [0, 1)
	cosine := graph.Cos(graph.MulScalar(cycle, math.Pi))
	// GoMLX's (1+cosine)/2*span, as XLA folded its constants 1/2 and span: (1+cosine) times
	// span/2 (the same number on the pure-Go backend, which folds nothing: halving is exact).
	lr := graph.Add(graph.Mul(graph.OnePlus(cosine), fed(hyperCosineHalfSpan)), fed(hyperMinLearningRate))
	ratio := graph.MinScalar(graph.Mul(step, fed(hyperCosineWarmupInv)), 1.0)
	warmupLR := graph.Add(graph.Mul(ratio, fed(hyperCosineSpan)), fed(hyperMinLearningRate))
	lr = graph.Where(graph.IsNegative(adjusted), warmupLR, lr)
	optimizer.LearningRateVarWithValue(scope, dtype, c.learningRate).SetNodeValue(lr)
}
