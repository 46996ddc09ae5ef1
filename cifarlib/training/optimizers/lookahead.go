package optimizers

// Airbench's lookahead (Plan.Lookahead; training.Settings.Run.Lookahead): an EMA of the model's
// state that the weights are reset to every LookaheadEvery steps, as a wrapper around the run's
// optimizer.

import (
	"fmt"
	"math"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// LookaheadEvery is the period of airbench's lookahead updates, in steps: a run of fewer steps
// ends on its initial weights.
const LookaheadEvery = 5

// lookaheadScope is where the EMA copies live: one per model variable, at lookaheadScope + the
// variable's path, non-trainable and saved in checkpoints, so a resumed run continues exactly.
var lookaheadScope = model.JoinPath("/", optimizer.Scope, "lookahead")

// lookaheadOptimizer is airbench's LookaheadState (airbench 0.1.8, utils.py) applied after each
// step of its inner optimizer: after step s (counted from 1) of total, when s is a multiple of
// LookaheadEvery,
//
//	ema = lerp(ema, w, 1-decay), w = ema, with decay = 0.95^5 * (s/total)^3
//
// over every float variable of the model, its weights and its batch-norm running statistics
// alike (airbench's net.state_dict(); not GoMLX batch norm's avg_weight, a count of steps like
// PyTorch's num_batches_tracked, which airbench leaves out as an integer), and at the last step
// (s >= total) the update with decay 1, w = ema, so the run ends on the EMA. The EMA starts at
// the weights before the first step (airbench takes its copy when the model is made, before the
// whitening layer is initialised from the data: here it is after, which differs by decay*(the
// change) at step 5, decay <= 0.77*(5/total)^3). A transferred run's step counts from 0 again,
// so its EMA starts at the transferred weights. As airbench's, a run of fewer than 5 steps ends
// on its initial weights (the EMA was never updated), and the last steps after a multiple of 5
// are averaged away.
type lookaheadOptimizer struct {
	inner optimizer.Interface
	// scope is the model's variable prefix ("/airbench94/").
	scope string
	total int
}

// withLookahead wraps opt with lookahead over the variables under scope, for a run of total steps.
func withLookahead(opt optimizer.Interface, scope string, total int) *lookaheadOptimizer {
	return &lookaheadOptimizer{inner: opt, scope: scope, total: total}
}

// UpdateGraph implements optimizer.Interface.
func (o *lookaheadOptimizer) UpdateGraph(scope *model.Scope, g *graph.Graph, loss *graph.Node) {
	o.inner.UpdateGraph(scope, g, loss)
	o.update(scope.Store(), g)
}

// UpdateGraphWithGradients implements train.OptimizeWithGradients when the inner optimizer does.
func (o *lookaheadOptimizer) UpdateGraphWithGradients(scope *model.Scope, grads []*graph.Node, lossDType dtypes.DType) {
	inner, ok := o.inner.(train.OptimizeWithGradients)
	if !ok || len(grads) == 0 {
		panic(fmt.Errorf("optimizers: optimizer %T does not take accumulated gradients", o.inner))
	}
	inner.UpdateGraphWithGradients(scope, grads, lossDType)
	o.update(scope.Store(), grads[0].Graph())
}

// Clear implements optimizer.Interface: it clears the inner optimizer and deletes the EMA.
func (o *lookaheadOptimizer) Clear(scope *model.Scope) error {
	if err := o.inner.Clear(scope); err != nil {
		return err
	}
	return scope.Store().DeleteVariablesInScope(lookaheadScope)
}

// lookaheadVariable says whether v is part of the state lookahead averages: a float variable of
// the model (under scope), not batch norm's avg_weight.
func lookaheadVariable(v *model.Variable, scope string) bool {
	return strings.HasPrefix(v.Path(), scope) && v.DType().IsFloat() && v.Name() != "avg_weight"
}

// The lookahead's fed values (fed.go): its end, and the reciprocal of its end that the
// progress s/total is computed with.
const (
	hyperLookaheadSteps      = "lookahead_steps"
	hyperLookaheadStepsRecip = "lookahead_steps_recip"
)

// lookaheadFed returns the values the lookahead's graph reads at run time for a run of total
// steps: its end, and 1/total as graph.DivScalar computed it when it was a constant (in float64,
// converted to float32 as a constant is; GoMLX divides a float by a constant as a multiplication
// by its reciprocal), so a fed end computes the same numbers (TestLookaheadEndFed).
func lookaheadFed(total int) Values {
	return Values{hyperLookaheadSteps: float64(total), hyperLookaheadStepsRecip: 1.0 / float64(max(total, 1))}
}

// update builds the lookahead step after the inner optimizer's: the global step is the step just
// taken, from 1. Its end (total) is fed at run time (lookaheadFed), so a run of other steps or
// epochs reuses the compiled train step.
func (o *lookaheadOptimizer) update(store *model.Store, g *graph.Graph) {
	h := lookaheadFed(o.total)
	step := optimizer.GetGlobalStepVar(store).NodeValue(g)
	first := graph.Equal(step, graph.OnesLike(step))
	every := graph.Equal(graph.Rem(step, graph.Scalar(g, step.DType(), LookaheadEvery)), graph.ZerosLike(step))
	last := graph.GreaterOrEqual(step, Scalar(g, hyperLookaheadSteps, step.DType(), h[hyperLookaheadSteps]))
	weight := lookaheadWeight(step, h)
	var vars []*model.Variable
	for v := range store.IterVariables() {
		if lookaheadVariable(v, o.scope) && v.InUseByGraph(g) {
			vars = append(vars, v)
		}
	}
	for _, v := range vars {
		w := v.NodeValue(g)
		before := g.GetParameterByName(v.Path()) // the value before this step
		if before == nil {
			before = w
		}
		emaVar := store.VariableWithShape(lookaheadScope+v.Path(), shapes.Make(w.DType(), w.Shape().Dimensions...), initializer.Zero).SetTrainable(false)
		ema := graph.Where(first, before, emaVar.NodeValue(g))
		updated := graph.Where(every, lerp(ema, w, graph.ConvertDType(weight, w.DType())), ema)
		emaVar.SetNodeValue(updated)
		v.SetNodeValue(graph.Where(graph.LogicalOr(every, last), updated, w))
	}
}

// lookaheadWeight is the EMA's weight 1-decay after step (the global step, from 1) of the run
// whose fed values are h: decay = 0.95^5 * x^3 with x = step * (1/total), in float32.
func lookaheadWeight(step *graph.Node, h Values) *graph.Node {
	recip := Scalar(step.Graph(), hyperLookaheadStepsRecip, dtypes.Float32, h[hyperLookaheadStepsRecip])
	x := graph.Mul(graph.ConvertDType(step, dtypes.Float32), recip)
	decay := graph.MulScalar(graph.Mul(x, graph.Mul(x, x)), math.Pow(0.95, LookaheadEvery))
	return graph.OneMinus(decay)
}

// lerp is PyTorch's lerp(start, end, weight) on the CPU: start + weight*(end-start) for
// weight < 0.5, else end - (end-start)*(1-weight), with a scalar weight.
func lerp(start, end, weight *graph.Node) *graph.Node {
	diff := graph.Sub(end, start)
	low := graph.Add(start, graph.Mul(diff, weight))
	high := graph.Sub(end, graph.Mul(diff, graph.OneMinus(weight)))
	return graph.Where(graph.LessThan(weight, graph.Scalar(weight.Graph(), weight.DType(), 0.5)), low, high)
}
