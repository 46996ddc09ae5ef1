package training

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/metric"
)

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
