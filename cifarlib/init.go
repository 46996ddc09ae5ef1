package cifarlib

import (
	"math"

	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
)

// Initialisation. The loss at initialisation is ln(C) when the logits start near zero, and
// about ln(C) plus half their variance otherwise. GoMLX's default initialiser (He normal: std
// sqrt(2/fan_in), zero biases) everywhere gave logits with a standard deviation of 1.1 to 2.3
// and a first-step loss of 1.2 to 1.9 ln(C) (3.9 and 5.3 on real CIFAR-10, ln 10 = 2.30), for
// three reasons, measured per architecture (TestLossAtInit):
//
//   - the head: He's gain of 2 is for a layer followed by a ReLU, and the head has none. It now
//     has PyTorch's nn.Linear default (torchDefaultInit), sqrt(6) times smaller in standard
//     deviation; on its own that brings the linear model to 0.97-1.05 ln(C), but not the others;
//   - the cnn, which has no normalisation: He's gain keeps the second moment of the
//     pre-activations, and each 2x2 max-pool (the largest of four values) raises it again, so the
//     features reaching the head have a mean square of about 2.5 (first-step loss 1.2 ln(C) for
//     10 classes even with PyTorch's head). Its convolutions now start from LeCun normal
//     (lecunNormalInit: std 1/sqrt(fan_in), JAX/Flax's default for convolutions);
//   - the ResNets: each BasicBlock adds its residual branch's variance to the shortcut's, so the
//     features grow with depth (first-step loss up to 1.27 ln(C) with PyTorch's head). Each
//     branch now ends in a batch norm whose scale starts at zero (residualBatchNorm:
//     torchvision's zero_init_residual=True, timm's default), so every block starts as its
//     shortcut.

// torchDefaultInit is PyTorch's default initialisation of nn.Linear (and nn.Conv2d) with fanIn
// inputs: weights and biases drawn from U(-1/sqrt(fanIn), 1/sqrt(fanIn)) (kaiming_uniform_ with
// a=sqrt(5), and the bias bound of reset_parameters), from the store's random state, so the
// same seed gives the same values.
func torchDefaultInit(scope *model.Scope, fanIn int) model.VariableInitializer {
	bound := 1 / math.Sqrt(float64(max(fanIn, 1)))
	return initializer.RandomUniformFn(scope, -bound, bound)
}

// lecunNormalInit draws weights from N(0, 1/fanIn) (LeCun normal, JAX/Flax's default for
// convolutions; GoMLX's He default has twice the variance) and starts biases at zero, from the
// store's random state.
func lecunNormalInit(scope *model.Scope, fanIn int) model.VariableInitializer {
	stddev := 1 / math.Sqrt(float64(max(fanIn, 1)))
	return func(g *graph.Graph, shape shapes.Shape) *graph.Node {
		if shape.Rank() <= 1 {
			return graph.Zeros(g, shape)
		}
		return initializer.RandomNormalFn(scope, stddev)(g, shape)
	}
}
