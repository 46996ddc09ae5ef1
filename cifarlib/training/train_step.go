package training

// The train step: GoMLX's trainer of a run, with its optimizer (package optimizers), its loss
// and its metrics, and the values its graph is fed at run time.

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/loss"
	"github.com/gomlx/gomlx/ml/train/metric"
)

// newGoMLXTrainer builds GoMLX's train.Trainer of t for plan p: t's model function, the guarded
// loss (unless Unguarded), the optimizer and the metrics; or takes the one an earlier run
// compiled (Env.Programs), its optimizer built all the same (its errors are the run's). The
// optimizer, metrics and loss are made before GoMLX's trainer, whose panics TrainCatch turns
// into errors.
func newGoMLXTrainer(p *plan, t *Trainer) (*train.Trainer, error) {
	opt, err := p.optimizerPlan(t.transfer).Build(p.Optimizer)
	switch {
	case err != nil:
		return nil, err
	case t.progs.trainer != nil:
		return t.progs.trainer, nil
	}
	metrics, evalMetrics := trainMetricsFor(p.TopK(), p.Model.Unguarded, t.model.NumClasses), evalMetricsFor(p.TopK())
	mode := cifarlib.GuardAll
	if p.Model.Unguarded {
		mode = cifarlib.GuardOff
	}
	lossFn := trainLoss(p, t.model, mode)
	var trainer *train.Trainer
	err = backends.TrainCatch(func() error {
		trainer = train.NewTrainer(t.backend, t.store, t.modelFn, lossFn, opt, metrics, evalMetrics)
		t.progs.keep(trainer)
		return nil
	})
	return trainer, err
}

// The training loss: the model's guarded loss with label smoothing fed at run time.

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

// Indices of the training metrics returned by each step: GoMLX's train.Trainer always puts
// the batch loss and its moving average first; cifarlib adds accuracy and, for CIFAR-100, top-5
// (then, unguarded, the out-of-range label count).
const (
	trainMetricLoss = iota
	trainMetricMovingLoss
	trainMetricAccuracy
	trainMetricTopK
)

// topKAccuracyGraph returns a GoMLX metric graph function for top-k accuracy: the fraction of
// examples whose true class is among the k largest logits. An example counts as a hit when fewer
// than k logits are strictly greater than the true class's logit (ties favour the true class).
// Labels outside [0, numClasses) are always misses. labels[0] must be integer [batch, 1] and
// logits[0] float [batch, numClasses].
func topKAccuracyGraph(k int) metric.BaseMetricGraph {
	return func(_ *model.Scope, labels, logits []*graph.Node) *graph.Node {
		return graph.ReduceAllMean(topKHits(labels[0], logits[0], k))
	}
}

// topKHits returns, per example, 1 when the label is among the top k logits and 0 otherwise
// (in the logits' dtype). labels: [batch, 1] or [batch] integers; logits: [batch, classes].
func topKHits(labels, logits *graph.Node, k int) *graph.Node {
	g := logits.Graph()
	dtype := logits.DType()
	n := logits.Shape().Dimensions[logits.Rank()-1]
	if labels.Rank() == logits.Rank() {
		labels = graph.Squeeze(labels, -1)
	}
	labels = graph.ConvertDType(labels, dtypes.Int32)
	valid := graph.LogicalAnd(
		graph.GreaterOrEqual(labels, graph.ScalarZero(g, dtypes.Int32)),
		graph.LessThan(labels, graph.Const(g, int32(n))))
	oneHot := graph.OneHot(labels, n, dtype) // All zeros for out-of-range labels.
	trueLogit := graph.ReduceSum(graph.Mul(logits, oneHot), -1)
	above := graph.ReduceSum(graph.ConvertDType(graph.GreaterThan(logits, graph.InsertAxes(trueLogit, -1)), dtype), -1)
	hit := graph.LogicalAnd(valid, graph.LessThan(above, graph.Scalar(g, dtype, float64(k))))
	return graph.ConvertDType(hit, dtype)
}

func trainPrettyPercent(value *tensors.Tensor) string {
	return fmt.Sprintf("%.2f%%", shapes.ConvertTo[float64](value.Value())*100.0)
}

// trainAccuracyWeight is the weight of each new batch in the training accuracy's moving average
// (GoMLX's: the plain mean of the first 1/weight batches, then an exponential average). At
// GoMLX's usual 0.01 the curve still carried the first 100 batches at step 200 and sat 13
// points under the test accuracy; at 0.1 it follows the batches within about 10 steps, like the
// smoothed loss beside it. The charts draw the batch accuracy (the last training metric)
// smoothed like the loss instead (runs.History.SmoothedAccuracy).
const trainAccuracyWeight = 0.1

// trainMetricsFor returns the training metrics (after GoMLX's own two loss metrics): moving
// averages of accuracy and, when topK > 0, of top-k accuracy; when unguarded, the count of
// labels outside the head per batch (LabelGuardMetric), so the progress bar shows the
// examples that get zero loss; last, the batch accuracy.
func trainMetricsFor(topK int, unguarded bool, headWidth int) []metric.Interface {
	ms := []metric.Interface{metric.NewMovingAverageSparseCategoricalAccuracy("Moving Average Accuracy", "~acc", trainAccuracyWeight)}
	if topK > 0 {
		ms = append(ms, metric.NewExponentialMovingAverageMetric(fmt.Sprintf("Moving Average Top-%d Accuracy", topK),
			fmt.Sprintf("~top%d", topK), metric.AccuracyMetricType, topKAccuracyGraph(topK), trainPrettyPercent, trainAccuracyWeight))
	}
	if unguarded {
		ms = append(ms, cifarlib.LabelGuardMetric(headWidth))
	}
	// Last: the batch's own accuracy, which the charts and TensorBoard smooth like the loss.
	return append(ms, metric.NewBaseMetric("Batch Accuracy", "acc", metric.AccuracyMetricType,
		metric.SparseCategoricalAccuracyGraph, trainPrettyPercent))
}

// evalMetricsFor returns the metrics of GoMLX's Trainer.Eval (after its mean loss): mean
// accuracy and, when topK > 0, mean top-k accuracy.
func evalMetricsFor(topK int) []metric.Interface {
	ms := []metric.Interface{metric.NewSparseCategoricalAccuracy("Mean Accuracy", "#acc")}
	if topK > 0 {
		ms = append(ms, metric.NewMeanMetric(fmt.Sprintf("Mean Top-%d Accuracy", topK), fmt.Sprintf("#top%d", topK),
			metric.AccuracyMetricType, topKAccuracyGraph(topK), trainPrettyPercent))
	}
	return ms
}

// ckptParamTrainMetrics is the checkpoint parameter that holds the running state of the
// training metrics (metricState): the moving averages of the loss and accuracy are GoMLX
// variables under a name made afresh for each run ("/metrics/<name>_uuid_<id>/mean"), which the
// checkpoint does not save (trainCheckpoint.save), and GoMLX's loop resets them when it starts.
// A resumed run sets them from this parameter, so that its moving averages continue where the
// interrupted run's stopped: its summary and history equal those of a run never interrupted.
const ckptParamTrainMetrics = "cifarlab_train_metrics"

// metricState is the state of the training metrics: by metric name, each of its variables'
// value (a scalar) and dtype.
type metricState map[string]map[string]metricValue

// metricValue is a metric variable's scalar value and its dtype's name.
type metricValue struct {
	DType string  `json:"dtype"`
	Value float64 `json:"value"`
}

// metricScope is the variable scope of the GoMLX metric m ("/metrics/<its scope name>").
func metricScope(m metric.Interface) string { return model.JoinPath("/", metric.Scope, m.ScopeName()) }

// saveMetricState records the state of the run's training metrics in the Store's parameters,
// which the next checkpoint saves with the weights.
func (t *Trainer) saveMetricState() error {
	state := metricState{}
	for _, m := range t.trainer.TrainMetrics() {
		prefix := metricScope(m) + "/"
		for v := range t.store.IterVariables() {
			if !strings.HasPrefix(v.Path(), prefix) {
				continue
			}
			value, err := v.Value()
			if err != nil || value.Shape().Size() != 1 {
				continue // not a running scalar: nothing to carry
			}
			if state[m.Name()] == nil {
				state[m.Name()] = map[string]metricValue{}
			}
			state[m.Name()][strings.TrimPrefix(v.Path(), prefix)] = metricValue{DType: value.DType().String(),
				Value: shapes.ConvertTo[float64](value.Value())}
		}
	}
	b, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("training: recording the training metrics' state: %w", err)
	}
	t.store.RootScope().SetParam(ckptParamTrainMetrics, string(b))
	return nil
}

// restoreMetricState sets the training metrics of a resumed run to the state its checkpoint
// recorded (after GoMLX's loop reset them, before the first step): it reports false when the
// checkpoint recorded none (one written before it was recorded), and the moving averages then
// start again at the resume.
func (t *Trainer) restoreMetricState() (bool, error) {
	raw := model.GetParamOr(t.store.RootScope(), ckptParamTrainMetrics, "")
	if raw == "" {
		return false, nil
	}
	var state metricState
	if err := json.Unmarshal([]byte(raw), &state); err != nil {
		return false, fmt.Errorf("training: the checkpoint's training metrics' state: %w", err)
	}
	for _, m := range t.trainer.TrainMetrics() {
		for name, mv := range state[m.Name()] {
			dtype, err := dtypes.DTypeString(mv.DType)
			if err != nil {
				return false, fmt.Errorf("training: the checkpoint's training metric %q: %w", m.Name(), err)
			}
			value, err := tensors.FromAnyValue(shapes.CastAsDType(mv.Value, dtype))
			if err == nil {
				err = setMetricVariable(t.store, metricScope(m)+"/"+name, value)
			}
			if err != nil {
				return false, fmt.Errorf("training: restoring the training metric %q: %w", m.Name(), err)
			}
		}
	}
	return true, nil
}

// setMetricVariable sets the metric variable at path to value, creating it (not trainable) when
// the train step has not been built yet: its graph then uses it as it is.
func setMetricVariable(store *model.Store, path string, value *tensors.Tensor) error {
	if v := store.GetVariable(path); v != nil {
		return v.SetValue(value)
	}
	v, err := store.CreateVariable(path, value)
	if err == nil {
		v.SetTrainable(false)
	}
	return err
}

// resumeMetrics carries a resumed run's training metrics over from its checkpoint, as GoMLX's
// loop starts (it has just reset them); when the checkpoint recorded none, metricsFrom says from
// which step the moving averages count.
func (t *Trainer) resumeMetrics() error {
	step, resumed := t.ckpt.resumedAt()
	if !resumed {
		return nil
	}
	carried, err := t.restoreMetricState()
	if err != nil {
		return err
	}
	if !carried {
		t.metricsFrom = step
	}
	return nil
}

// optimizerPlan is what the optimizer of plan p depends on besides its own settings, with the
// backbone's learning rate of its transfer tt (nil: none).
func (p *plan) optimizerPlan(tt *trainTransfer) optimizers.Plan {
	scope, _ := archScopes(p.Model.Arch)
	op := optimizers.Plan{Schedule: p.Schedule, Steps: p.Run.Steps, Batch: p.Data.BatchSize,
		WhitenBiasSteps: p.whitenBiasEpochs() * p.stepsPerEpoch, Lookahead: p.Run.Lookahead, ModelScope: scope}
	if tt != nil {
		op.BackboneRatio, op.Backbone = tt.lrRatio, tt.isBackbone
	}
	return op
}

// fed are the values a run of plan p feeds its train step (optimizers.Values): its optimizer's,
// its schedule's and its lookahead's, and its loss's label-smoothing factors (trainLoss).
func (p *plan) fed() optimizers.Values {
	h := p.optimizerPlan(nil).Fed(p.Optimizer)
	h[hyperSmoothingKeep], h[hyperSmoothingSpread] = cifarlib.SmoothingFactors(p.Run.LabelSmoothing, p.headWidth())
	return h
}
