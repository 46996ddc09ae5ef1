package training

// The optimizer part of a Trainer: GoMLX's trainer, with the optimizer of the plan and a
// transferred run's backbone learning rate.

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// newGoMLXTrainer builds GoMLX's train.Trainer of t for plan p: t's model function, the guarded
// loss (unless Unguarded), the optimizer and the metrics; or takes the one an earlier run
// compiled (Env.Programs).
func newGoMLXTrainer(p *plan, t *Trainer) (trainer *train.Trainer, err error) {
	err = backends.TrainCatch(func() error {
		opt, err := newOptimizer(p, t.transfer)
		if err != nil {
			return err
		}
		mode := cifarlib.GuardAll
		if p.Model.Unguarded {
			mode = cifarlib.GuardOff
		}
		if trainer = t.progs.trainer; trainer == nil {
			trainer = train.NewTrainer(t.backend, t.store, t.modelFn, trainLoss(p, t.model, mode), opt,
				trainMetricsFor(p.TopK(), p.Model.Unguarded, t.model.NumClasses), evalMetricsFor(p.TopK()))
			t.progs.keep(trainer)
		}
		return nil
	})
	return trainer, err
}

// newOptimizer builds the GoMLX optimizer of plan p, the backbone's rate of its transfer tt
// (nil without one) included. With lookahead, the whole is wrapped in it (lookaheadOptimizer).
func newOptimizer(p *plan, tt *trainTransfer) (optimizer.Interface, error) {
	var opt optimizer.Interface
	switch o := p.Optimizer.(type) {
	case Nesterov:
		opt = newNesterov(o.LearningRate, o.Momentum, o.WeightDecay, o.BiasScaler, p.Data.BatchSize, o.WhitenBiasEpochs*p.stepsPerEpoch)
	case AdamW:
		opt = optimizer.Adam().LearningRate(o.LearningRate).WeightDecay(o.WeightDecay).Done()
	default:
		var err error
		if opt, err = namedOptimizer(o.Algorithm(), learningRate(o)); err != nil {
			return nil, err
		}
	}
	opt = tt.wrapOptimizer(opt)
	if p.Run.Lookahead {
		scope, _ := archScopes(p.Model.Arch)
		opt = withLookahead(opt, scope, p.Run.Steps)
	}
	return opt, nil
}

// namedOptimizer builds the GoMLX optimizer named name with its learning rate: one without
// settings of its own.
func namedOptimizer(name string, learningRate float64) (optimizer.Interface, error) {
	switch name {
	case OptimizerSGD:
		return optimizer.StochasticGradientDescent().WithLearningRate(learningRate).WithDecay(false).Done(), nil
	case OptimizerAdam:
		return optimizer.Adam().LearningRate(learningRate).Done(), nil
	case OptimizerAdamax:
		return optimizer.Adam().Adamax().LearningRate(learningRate).Done(), nil
	case OptimizerRMSProp:
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
