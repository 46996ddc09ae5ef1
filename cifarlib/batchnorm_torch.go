package cifarlib

import (
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/norm"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
)

// torchBatchNormConfig configures torchBatchNorm.
type torchBatchNormConfig struct {
	// momentum and epsilon are PyTorch's: running = (1-momentum)*running + momentum*batch.
	momentum, epsilon float64
	// fixedScale keeps the scale (PyTorch's weight) out of training (requires_grad False).
	fixedScale bool
}

// torchBatchNorm is PyTorch's nn.BatchNorm2d on x [batch, H, W, C], the batch norm of the
// models whose recipe depends on PyTorch's statistics (ArchAirbench94), where nb.batchNorm is
// GoMLX's norm.BatchNorm (Keras' debiased moving averages of the biased variance). It keeps
// GoMLX's variables, in scope.In("batch_normalization"): "scale" (weight, starts at 1), "offset"
// (bias, starts at 0), "mean" and "variance" (running_mean from 0 and running_var from 1) and
// "avg_weight" (num_batches_tracked, the batches seen, per channel), so that checkpoints,
// transfer, summaries and the PyTorch key map treat it like the ResNets' batch norm. In
// training it normalises with the batch's mean and biased variance, the gradient flowing
// through both, and updates running_mean and running_var, the latter from the unbiased batch
// variance (times n/(n-1), n = batch*H*W), as PyTorch does; in inference it normalises with the
// running statistics. nb.m.BatchNorm picks the backend's fused ops (BatchNormBackendOps) or
// elementary graph ops (BatchNormGraph) for the same function.
func (nb *netBuilder) torchBatchNorm(scope *model.Scope, x *graph.Node, c torchBatchNormConfig) *graph.Node {
	g := x.Graph()
	s := scope.In(norm.BatchNormalizationScopeName)
	dims := x.Shape().Dimensions
	vs := shapes.Make(x.DType(), dims[3])
	scaleVar := s.WithInitializer(initializer.One).VariableWithShape("scale", vs)
	if c.fixedScale {
		scaleVar.SetTrainable(false)
	}
	scale := scaleVar.NodeValue(g)
	offset := s.WithInitializer(initializer.Zero).VariableWithShape("offset", vs).NodeValue(g)
	meanVar := s.WithInitializer(initializer.Zero).VariableWithShape("mean", vs).SetTrainable(false)
	varianceVar := s.WithInitializer(initializer.One).VariableWithShape("variance", vs).SetTrainable(false)
	countVar := s.WithInitializer(initializer.Zero).VariableWithShape("avg_weight", vs).SetTrainable(false)
	fused := nb.m.BatchNorm == BatchNormBackendOps
	if !scope.IsTraining(g) {
		mean, variance := meanVar.NodeValue(g), varianceVar.NodeValue(g)
		if fused {
			return graph.InternalBatchNormForInference(x, scale, offset, mean, variance, float32(c.epsilon), -1)
		}
		return normalizeChannels(x, scale, offset, mean, variance, c.epsilon)
	}
	var y, mean, variance *graph.Node
	if fused {
		y, mean, variance = graph.InternalBatchNormForTraining(x, scale, offset, float32(c.epsilon), -1)
	} else {
		mean = graph.ReduceMean(x, 0, 1, 2)
		variance = graph.ReduceMean(graph.Square(graph.Sub(x, graph.Reshape(mean, 1, 1, 1, dims[3]))), 0, 1, 2)
		y = normalizeChannels(x, scale, offset, mean, variance, c.epsilon)
	}
	n := float64(dims[0] * dims[1] * dims[2])
	unbiased := graph.StopGradient(variance)
	if n > 1 {
		unbiased = graph.MulScalar(unbiased, n/(n-1))
	}
	blend := func(v *model.Variable, batch *graph.Node) {
		v.SetNodeValue(graph.Add(graph.MulScalar(v.NodeValue(g), 1-c.momentum), graph.MulScalar(batch, c.momentum)))
	}
	blend(meanVar, graph.StopGradient(mean))
	blend(varianceVar, unbiased)
	countVar.SetNodeValue(graph.OnePlus(countVar.NodeValue(g)))
	return y
}

// normalizeChannels is (x - mean) / sqrt(variance + epsilon) * scale + offset for x
// [batch, H, W, C] and the others [C], in elementary graph ops (differentiable in all of them).
func normalizeChannels(x, scale, offset, mean, variance *graph.Node, epsilon float64) *graph.Node {
	c := x.Shape().Dimensions[3]
	channel := func(v *graph.Node) *graph.Node { return graph.Reshape(v, 1, 1, 1, c) }
	scaled := graph.Div(channel(scale), graph.Sqrt(graph.AddScalar(channel(variance), epsilon)))
	return graph.Add(graph.Mul(graph.Sub(x, channel(mean)), scaled), channel(offset))
}
