package training

// The optimizer part of a Trainer: GoMLX's optimizer named in the plan, with a transferred
// run's backbone learning rate.

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// newOptimizer builds the GoMLX optimizer of plan p, the backbone's rate of its transfer tt
// (nil without one) included.
// With Lookahead, the whole is wrapped in the lookahead (lookaheadOptimizer).
func newOptimizer(p *plan, tt *trainTransfer) (optimizer.Interface, error) {
	var opt optimizer.Interface
	if p.Optimizer == OptimizerNesterov {
		opt = newNesterov(p.LearningRate, p.Momentum, p.WeightDecay, p.BiasScaler, p.BatchSize, p.WhitenBiasEpochs*p.stepsPerEpoch)
	} else {
		var err error
		if opt, err = namedOptimizer(p.Optimizer, p.LearningRate, p.WeightDecay); err != nil {
			return nil, err
		}
	}
	opt = tt.wrapOptimizer(opt)
	if p.Lookahead {
		scope, _ := archScopes(p.Model)
		opt = withLookahead(opt, scope, p.Steps)
	}
	return opt, nil
}

// namedOptimizer builds the GoMLX optimizer named name (one of trainOptimizers).
func namedOptimizer(name string, learningRate, weightDecay float64) (optimizer.Interface, error) {
	switch name {
	case "sgd":
		return optimizer.StochasticGradientDescent().WithLearningRate(learningRate).WithDecay(false).Done(), nil
	case "adam":
		return optimizer.Adam().LearningRate(learningRate).Done(), nil
	case "adamw":
		return optimizer.Adam().LearningRate(learningRate).WeightDecay(weightDecay).Done(), nil
	case "adamax":
		return optimizer.Adam().Adamax().LearningRate(learningRate).Done(), nil
	case "rmsprop":
		return optimizer.RMSProp().LearningRate(learningRate).Done(), nil
	}
	return nil, &ConfigError{Field: "Optimizer", Value: name, Reason: "unknown optimizer"}
}

// wrapOptimizer returns opt, or, with a separate backbone learning rate, opt with the
// backbone's updates scaled by BackboneLearningRate/LearningRate.
func (tt *trainTransfer) wrapOptimizer(opt optimizer.Interface) optimizer.Interface {
	if tt == nil || tt.lrRatio == 1 {
		return opt
	}
	return &backboneRateOptimizer{inner: opt, tt: tt}
}

// backboneRateOptimizer runs its inner optimizer, then scales each backbone variable's update
// (new - old) by ratio. Every optimizer cifarlib offers (SGD, Adam, AdamW, Adamax, RMSProp)
// moves a variable by the learning rate times a step that does not depend on it (AdamW's decay
// is scaled by the learning rate too), and its moments do not depend on the learning rate, so
// this is the inner optimizer run with learning rate LearningRate*ratio for the backbone, the
// schedule included, up to float32 rounding.
type backboneRateOptimizer struct {
	inner optimizer.Interface
	tt    *trainTransfer
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
		panic(fmt.Errorf("training: optimizer %T does not take accumulated gradients", o.inner))
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
		if v.Trainable && o.tt.isBackbone(v.Path()) && v.InUseByGraph(g) {
			before = append(before, backboneValue{v: v, old: v.NodeValue(g)})
		}
	}
	return before
}

func (o *backboneRateOptimizer) scale(g *graph.Graph, before []backboneValue) {
	for _, b := range before {
		step := graph.Sub(b.v.NodeValue(g), b.old)
		b.v.SetNodeValue(graph.Add(b.old, graph.MulScalar(step, o.tt.lrRatio)))
	}
}
