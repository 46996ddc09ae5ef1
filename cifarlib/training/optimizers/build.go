package optimizers

// The optimizer of a run: its algorithm's GoMLX optimizer, the backbone's learning rate of a
// transfer, and lookahead around the whole.

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// Plan is what a run's optimizer, its schedule and the values they are fed depend on besides
// the optimizer's own settings: the run's schedule, its length and batch, the whitening bias's
// freeze step, its lookahead, and a transferred run's backbone learning rate.
type Plan struct {
	// Schedule is the learning-rate schedule; Steps the run's target step, which the schedules
	// and lookahead span.
	Schedule Schedule
	Steps    int
	// Batch is the global batch (nesterov's decoupled hyper-parameters are per 1024 examples);
	// WhitenBiasSteps the step airbench94's whitening bias freezes at (nesterov; 0: never).
	Batch, WhitenBiasSteps int
	// Lookahead wraps the optimizer in airbench's lookahead over the variables under ModelScope
	// (the model's, e.g. "/cnn/").
	Lookahead  bool
	ModelScope string
	// BackboneRatio, when not 0 or 1, scales the updates of the variables Backbone says are the
	// backbone's: a transferred run's backbone learning rate over its head's.
	BackboneRatio float64
	Backbone      func(path string) bool
}

// Build builds the GoMLX optimizer of o for plan p: the algorithm's, the backbone's rate applied,
// in lookahead when p has it.
func (p Plan) Build(o Optimizer) (optimizer.Interface, error) {
	var opt optimizer.Interface
	switch o := o.(type) {
	case Nesterov:
		opt = newNesterov(o.LearningRate, o.Momentum, o.WeightDecay, o.BiasScaler, p.Batch, p.WhitenBiasSteps)
	case AdamW:
		opt = optimizer.Adam().LearningRate(o.LearningRate).WeightDecay(o.WeightDecay).Done()
	default:
		var err error
		if opt, err = namedOptimizer(o.Algorithm(), learningRate(o)); err != nil {
			return nil, err
		}
	}
	if p.BackboneRatio != 0 && p.BackboneRatio != 1 {
		opt = &backboneRateOptimizer{inner: opt, ratio: p.BackboneRatio, backbone: p.Backbone}
	}
	if p.Lookahead {
		opt = withLookahead(opt, p.ModelScope, p.Steps)
	}
	return opt, nil
}

// namedOptimizer builds the GoMLX optimizer named name with its learning rate: one without
// settings of its own.
func namedOptimizer(name string, learningRate float64) (optimizer.Interface, error) {
	switch name {
	case algoSGD:
		return optimizer.StochasticGradientDescent().WithLearningRate(learningRate).WithDecay(false).Done(), nil
	case algoAdam:
		return optimizer.Adam().LearningRate(learningRate).Done(), nil
	case algoAdamax:
		return optimizer.Adam().Adamax().LearningRate(learningRate).Done(), nil
	case algoRMSProp:
		return optimizer.RMSProp().LearningRate(learningRate).Done(), nil
	}
	return nil, fmt.Errorf("optimizers: unknown optimizer %q", name)
}

// backboneRateOptimizer runs its inner optimizer, then scales each backbone variable's update
// (new - old) by ratio. Every optimizer cifarlib offers (SGD, Adam, AdamW, Adamax, RMSProp)
// moves a variable by the learning rate times a step that does not depend on it (AdamW's decay
// is scaled by the learning rate too), and its moments do not depend on the learning rate, so
// this is the inner optimizer run with learning rate LearningRate*ratio for the backbone, the
// schedule included, up to float32 rounding.
type backboneRateOptimizer struct {
	inner    optimizer.Interface
	ratio    float64
	backbone func(path string) bool
}

// UpdateGraph implements optimizer.Interface.
func (o *backboneRateOptimizer) UpdateGraph(scope *model.Scope, g *graph.Graph, loss *graph.Node) {
	before := o.backboneValues(scope, g)
	o.inner.UpdateGraph(scope, g, loss)
	o.scale(g, before)
}

// UpdateGraphWithGradients implements train.OptimizeWithGradients when the inner optimizer does.
func (o *backboneRateOptimizer) UpdateGraphWithGradients(scope *model.Scope, grads []*graph.Node, lossDType dtypes.DType) {
	inner, ok := o.inner.(train.OptimizeWithGradients)
	if !ok || len(grads) == 0 {
		panic(fmt.Errorf("optimizers: optimizer %T does not take accumulated gradients", o.inner))
	}
	g := grads[0].Graph()
	before := o.backboneValues(scope, g)
	inner.UpdateGraphWithGradients(scope, grads, lossDType)
	o.scale(g, before)
}

// Clear implements optimizer.Interface.
func (o *backboneRateOptimizer) Clear(scope *model.Scope) error { return o.inner.Clear(scope) }

// backboneValue is a trainable backbone variable and its value before the optimizer's update.
type backboneValue struct {
	v   *model.Variable
	old *graph.Node
}

func (o *backboneRateOptimizer) backboneValues(scope *model.Scope, g *graph.Graph) []backboneValue {
	var before []backboneValue
	for v := range scope.Store().IterVariables() {
		if v.Trainable && o.backbone(v.Path()) && v.InUseByGraph(g) {
			before = append(before, backboneValue{v: v, old: v.NodeValue(g)})
		}
	}
	return before
}

func (o *backboneRateOptimizer) scale(g *graph.Graph, before []backboneValue) {
	for _, b := range before {
		step := graph.Sub(b.v.NodeValue(g), b.old)
		b.v.SetNodeValue(graph.Add(b.old, graph.MulScalar(step, o.ratio)))
	}
}
