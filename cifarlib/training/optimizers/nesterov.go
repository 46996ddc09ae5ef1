package optimizers

// Airbench's Nesterov SGD (an Optimizer Nesterov) as a GoMLX optimizer.

import (
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// nesterovScope is where the momentum buffers live: one per trainable variable, at
// nesterovScope + the variable's path, saved in checkpoints with the weights.
var nesterovScope = model.JoinPath("/", optimizer.Scope, algoNesterov)

// paramGroup is the optimizer's treatment of a variable, after airbench's param groups.
type paramGroup int

const (
	// groupOther is trained at the learning rate, with weight decay.
	groupOther paramGroup = iota
	// groupNormBias (a batch-norm bias) is trained at the learning rate times BiasScaler, with the
	// same absolute weight decay.
	groupNormBias
	// groupWhitenBias (airbench94's whitening bias) is trained as groupOther for the first
	// WhitenBiasEpochs epochs, then frozen.
	groupWhitenBias
	// groupNotTrained is left unchanged (airbench trains no such parameter).
	groupNotTrained
)

// paramGroupOf says which group the trainable variable at path is in: airbench94's variables by
// cifarlib.AirbenchGroup (a trainable one it calls not trained, such as a batch-norm scale, is
// left unchanged); another model's after airbench's rule that a parameter with "norm" in its
// name is a batch-norm bias: a batch norm's "offset" (GoMLX's and cifarlib's batch norms live in
// a scope named "batch_normalization" or "...norm...").
func paramGroupOf(path string) paramGroup {
	if strings.HasPrefix(path, model.ScopeSeparator+cifarlib.ArchAirbench94+model.ScopeSeparator) {
		switch cifarlib.AirbenchGroup(path) {
		case cifarlib.AirbenchWhitenBias:
			return groupWhitenBias
		case cifarlib.AirbenchNormBias:
			return groupNormBias
		case cifarlib.AirbenchOther:
			return groupOther
		}
		return groupNotTrained
	}
	parts := strings.Split(path, model.ScopeSeparator)
	if parts[len(parts)-1] == "offset" && strings.Contains(strings.Join(parts[:len(parts)-1], model.ScopeSeparator), "norm") {
		return groupNormBias
	}
	return groupOther
}

// nesterovOptimizer is airbench94's optimizer (airbench 0.1.8, utils.py, train): PyTorch's
// SGD(momentum, nesterov=True) with airbench's decoupled hyper-parameters and param groups.
//
// LearningRate is the rate per 1024 examples and WeightDecay the decay per 1024 examples:
// with kilostep = 1024*(1 + 1/(1-momentum)), each step uses lr = LearningRate/kilostep times the
// schedule's factor, and decays by wd = WeightDecay*BatchSize/kilostep times the factor. As in
// PyTorch's SGD, for each trainable variable p with the gradient g of the loss summed over the
// batch (airbench's reduction='none' then .sum(): the trainer's loss is the mean, so g is its
// gradient times BatchSize):
//
//	d   = g + (wd/lrg)*p          // lrg: the group's lr without the schedule
//	buf = momentum*buf + d        // buf starts at 0, so the first buf is d, as PyTorch's
//	p   = p - lrg*factor*(d + momentum*buf)
//
// Batch-norm biases (groupNormBias) use lrg = lr*BiasScaler and the others lrg = lr, so the
// decay per step is wd*factor*p for every group. The whitening bias (groupWhitenBias) stops
// after whitenBiasSteps steps: as a PyTorch parameter without a gradient, neither it nor its
// buffer changes afterwards. The schedule's factor is read from GoMLX's learning-rate variable
// (which the schedule sets to LearningRate times the factor), so every Settings.Schedule applies.
// Every hyper-parameter but the batch is fed at run time (fed, fed.go), so one compiled
// train step serves any learning rate, momentum, weight decay, bias scaler and freeze step.
type nesterovOptimizer struct {
	// learningRate is Nesterov.LearningRate, the learning-rate variable's value at factor 1.
	learningRate float64
	momentum     float64
	// lr and wd are the per-step rate and decay (the kilostep-scaled ones above).
	lr, wd     float64
	biasScaler float64
	// batch scales the mean loss's gradients to those of the summed loss.
	batch int
	// whitenBiasSteps > 0 freezes groupWhitenBias from that global step (0-based) on.
	whitenBiasSteps int
}

// newNesterov builds airbench's optimizer for the given hyper-parameters (see nesterovOptimizer).
func newNesterov(learningRate, momentum, weightDecay, biasScaler float64, batch, whitenBiasSteps int) *nesterovOptimizer {
	kilostep := 1024 * (1 + 1/(1-momentum))
	return &nesterovOptimizer{learningRate: learningRate, momentum: momentum, lr: learningRate / kilostep,
		wd: weightDecay * float64(batch) / kilostep, biasScaler: biasScaler, batch: batch, whitenBiasSteps: whitenBiasSteps}
}

// The nesterov optimizer's fed values (fed.go): everything but the batch, which shapes
// the program.
const (
	hyperMomentum      = "momentum"
	hyperNesterovDecay = "nesterov_decay_" // + the group's name: wd/lrg
	hyperNesterovRate  = "nesterov_rate_"  // + the group's name: lrg/LearningRate
	// hyperNesterovFolded + the group's name: LearningRate times lrg/LearningRate, in float32
	// (groupRate).
	hyperNesterovFolded  = "nesterov_folded_rate_"
	hyperWhitenBiasSteps = "whiten_bias_steps" // the step the whitening bias freezes at
)

// neverFreeze is the whitening bias's freeze step when it never freezes (whitenBiasSteps 0): a
// step no run reaches, so step < neverFreeze always holds and picks the update, as the graph
// without the freeze does. It is exact in float64 and int64.
const neverFreeze = 1 << 52

// groupFactors are the decay wd/lrg and the rate lrg/LearningRate of a trained group, from its
// learning rate lrg (the schedule's factor aside).
func (o *nesterovOptimizer) groupFactors(group paramGroup) (decay, rate float64) {
	lrg := o.lr
	if group == groupNormBias {
		lrg *= o.biasScaler
	}
	return o.wd / lrg, lrg / o.learningRate
}

// groupName names a param group in the fed values' names.
func groupName(group paramGroup) string {
	if group == groupNormBias {
		return "norm_bias"
	}
	return "other"
}

// freezeStep is the step the whitening bias freezes at (neverFreeze when it does not).
func (o *nesterovOptimizer) freezeStep() int {
	if o.whitenBiasSteps > 0 {
		return o.whitenBiasSteps
	}
	return neverFreeze
}

// fed returns the values the optimizer's graph reads at run time (fed.go).
func (o *nesterovOptimizer) fed() Values {
	h := Values{hyperMomentum: o.momentum, hyperWhitenBiasSteps: float64(o.freezeStep())}
	for _, group := range []paramGroup{groupOther, groupNormBias} {
		decay, rate := o.groupFactors(group)
		name := groupName(group)
		h[hyperNesterovDecay+name], h[hyperNesterovRate+name] = decay, rate
		h[hyperNesterovFolded+name] = float64(float32(o.learningRate) * float32(rate))
	}
	return h
}

// groupRate is a group's rate in g: rate, the learning-rate variable (LearningRate times the
// schedule's factor), times lrg/LearningRate (fed). Under the triangle, where rate is
// factor*LearningRate, the graph with constants was (factor*LearningRate)*(lrg/LearningRate),
// which XLA's algebraic simplifier folds into factor*(LearningRate*(lrg/LearningRate)), the
// product of the two constants rounded to float32 at compile time; so on XLA (every backend but
// the pure-Go one, which folds nothing) the fed graph is factor times that product, computed on
// the host in float32 as XLA computes it: the same numbers as before, bit for bit.
func (o *nesterovOptimizer) groupRate(g *graph.Graph, rate *graph.Node, group paramGroup) *graph.Node {
	_, r := o.groupFactors(group)
	name := groupName(group)
	if factor := triangleFactor(g); factor != nil && factor.DType() == dtypes.Float32 && rate.DType() == dtypes.Float32 && !backends.IsGoBackend(g.Backend()) {
		return graph.Mul(factor, Scalar(g, hyperNesterovFolded+name, dtypes.Float32, float64(float32(o.learningRate)*float32(r))))
	}
	return graph.Mul(rate, Scalar(g, hyperNesterovRate+name, rate.DType(), r))
}

// UpdateGraph implements optimizer.Interface.
func (o *nesterovOptimizer) UpdateGraph(scope *model.Scope, g *graph.Graph, loss *graph.Node) {
	if !loss.Shape().IsScalar() {
		panic(fmt.Errorf("optimizers: the nesterov optimizer needs a scalar loss, got shape %s", loss.Shape()))
	}
	o.UpdateGraphWithGradients(scope, scope.BuildTrainableVariablesGradientsGraph(loss), loss.DType())
}

// UpdateGraphWithGradients implements train.OptimizeWithGradients: grads are those of the mean
// loss, one per trainable variable in use, in scope.IterVariables' order.
func (o *nesterovOptimizer) UpdateGraphWithGradients(scope *model.Scope, grads []*graph.Node, lossDType dtypes.DType) {
	if len(grads) == 0 {
		return
	}
	g := grads[0].Graph()
	rate := optimizer.LearningRateVar(scope, lossDType, o.learningRate).NodeValue(g) // LearningRate*factor
	step := optimizer.GetGlobalStepVar(scope).NodeValue(g)                           // the step being taken, from 0
	optimizer.IncrementGlobalStep(g, lossDType)
	store := scope.Store()
	i := 0
	for v := range scope.IterVariables() {
		if !v.Trainable || !v.InUseByGraph(g) {
			continue
		}
		if i >= len(grads) {
			panic(fmt.Errorf("optimizers: nesterov optimizer: more trainable variables than the %d gradients", len(grads)))
		}
		grad := grads[i]
		i++
		group := paramGroupOf(v.Path())
		if group == groupNotTrained {
			continue
		}
		decay, _ := o.groupFactors(group)
		name := groupName(group)
		p := v.NodeValue(g)
		dtype := p.DType()
		bufVar := store.VariableWithShape(nesterovScope+v.Path(), shapes.Make(dtype, p.Shape().Dimensions...), initializer.Zero).SetTrainable(false)
		buf := bufVar.NodeValue(g)
		momentum := Scalar(g, hyperMomentum, dtype, o.momentum)
		d := graph.Add(graph.MulScalar(graph.ConvertDType(grad, dtype), float64(o.batch)), graph.Mul(p, Scalar(g, hyperNesterovDecay+name, dtype, decay)))
		newBuf := graph.Add(graph.Mul(buf, momentum), d)
		update := graph.Add(d, graph.Mul(newBuf, momentum))
		rateNode := graph.ConvertDType(o.groupRate(g, rate, group), dtype)
		newP := graph.Sub(p, graph.Mul(update, rateNode))
		if group == groupWhitenBias {
			training := graph.LessThan(step, Scalar(g, hyperWhitenBiasSteps, step.DType(), float64(o.freezeStep())))
			newP = graph.Where(training, newP, p)
			newBuf = graph.Where(training, newBuf, buf)
		}
		v.SetNodeValue(newP)
		bufVar.SetNodeValue(newBuf)
	}
	if i != len(grads) {
		panic(fmt.Errorf("optimizers: nesterov optimizer: %d gradients for %d trainable variables", len(grads), i))
	}
}

// Clear implements optimizer.Interface: it deletes the momentum buffers.
func (o *nesterovOptimizer) Clear(scope *model.Scope) error {
	return scope.Store().DeleteVariablesInScope(nesterovScope)
}
