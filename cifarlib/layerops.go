package cifarlib

import (
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/regularizer"
	"github.com/gomlx/gomlx/ml/model"
)

// LayerOps selects how the models' convolutions and max-pooling are lowered to backend ops. Both
// kinds create the same variables (scope ".../conv", "weights" [k, k, Cin, Cout] and "biases"
// [Cout], as GoMLX's layers.Convolution does) and compute the same function, so checkpoints move
// freely between backends.
type LayerOps int

const (
	// LayerOpsNative uses GoMLX's layers.Convolution (graph.Convolve) and graph.MaxPool: the
	// backend's convolution and reduce-window ops. XLA's are fast; it is the default.
	LayerOpsNative LayerOps = iota
	// LayerOpsMatmul computes each "same"-padded convolution as im2col and one matrix
	// multiplication (the k*k shifted, strided copies of the zero-padded input concatenated on the
	// channel axis to [batch*H*W, k*k*Cin], times the kernel reshaped to [k*k*Cin, Cout]), and
	// each 2x2 max-pool as a reshape and a ReduceMax, so the forward pass and the gradients are
	// matmuls, slices and element-wise ops. Chosen for the pure-Go backend: compute v0.1.3's
	// direct convolution, reduce-window and select-and-scatter loops made the cnn training step
	// 3.5x slower (bench/README.md, "Findings"). It uses k*k times a layer's input memory for the
	// im2col copy; in a tie inside a pooling window the gradient goes to every maximum
	// (graph.MaxPool picks one), which after a ReLU only happens where the gradient is zero anyway.
	LayerOpsMatmul
)

// String returns "native" or "matmul".
func (k LayerOps) String() string {
	if k == LayerOpsMatmul {
		return "matmul"
	}
	return "native"
}

// LayerOpsFor returns the layer lowering that is fastest on the backend: LayerOpsMatmul for the
// pure-Go backend, LayerOpsNative for XLA (and when backend is nil).
func LayerOpsFor(backend compute.Backend) LayerOps {
	if backends.IsGoBackend(backend) {
		return LayerOpsMatmul
	}
	return LayerOpsNative
}

// convolution is a "same"-padded 2D convolution of x [batch, H, W, Cin] to channels outputs
// with a kernel x kernel window and the given stride, plus a bias when withBias. Its variables
// live in scope.In("conv") and match layers.Convolution's; nb.m.LayerOps picks the method. In
// bf16-mixed the input and the weights are cast to bfloat16 for the convolution alone (the
// im2col copies included) and its result back to float32, before the bias.
func (nb *netBuilder) convolution(scope *model.Scope, x *graph.Node, channels, kernel, stride int, withBias bool) *graph.Node {
	mixed := nb.m.Precision.computeDType() != x.DType()
	if nb.m.LayerOps != LayerOpsMatmul && !mixed {
		return layers.Convolution(scope, x).Channels(channels).KernelSize(kernel).Strides(stride).
			PadSame().UseBias(withBias).Done()
	}
	s := scope.In("conv")
	g := x.Graph()
	cin := x.Shape().Dimensions[3]
	weights := s.VariableWithShape("weights", shapes.Make(x.DType(), kernel, kernel, cin, channels))
	xc, wc := nb.toCompute(x), nb.toCompute(weights.NodeValue(g))
	var y *graph.Node
	if nb.m.LayerOps == LayerOpsMatmul {
		y = im2colConvolution(xc, wc, stride)
	} else {
		y = graph.Convolve(xc, wc).StridePerAxis(stride, stride).PadSame().Done()
	}
	y = fromCompute(y)
	if withBias {
		biases := s.VariableWithShape("biases", shapes.Make(x.DType(), channels)).NodeValue(g)
		y = graph.Add(y, graph.Reshape(biases, 1, 1, 1, channels))
	}
	if l2, found := s.GetParam(layers.ParamL2Regularization); found {
		if v, ok := l2.(float64); ok && v > 0 {
			regularizer.L2(v)(g, weights)
		}
	}
	return y
}

// im2colConvolution computes graph.Convolve(x, kernel).StridePerAxis(stride, stride).PadSame()
// for x [batch, H, W, Cin] and kernel [k, k, Cin, Cout] as slices, one concatenation and one
// matmul. Padding follows GoMLX's PadSame: (k-1)/2 zeros before and k/2 after each spatial axis,
// whatever the stride, so the output is [batch, (H-1)/stride+1, (W-1)/stride+1, Cout].
func im2colConvolution(x, kernel *graph.Node, stride int) *graph.Node {
	dims := x.Shape().Dimensions
	batch, h, w, cin := dims[0], dims[1], dims[2], dims[3]
	k, cout := kernel.Shape().Dimensions[0], kernel.Shape().Dimensions[3]
	outH, outW := (h-1)/stride+1, (w-1)/stride+1
	xp := zeroPadSpatial(x, (k-1)/2, k/2)
	patches := make([]*graph.Node, 0, k*k)
	for ky := range k {
		for kx := range k {
			patches = append(patches, graph.Slice(xp, graph.AxisRange(),
				graph.AxisRange(ky, ky+(outH-1)*stride+1).Stride(stride),
				graph.AxisRange(kx, kx+(outW-1)*stride+1).Stride(stride),
				graph.AxisRange()))
		}
	}
	cols := patches[0]
	if len(patches) > 1 {
		cols = graph.Concatenate(patches, 3) // [batch, outH, outW, k*k*Cin], (ky, kx, c) order
	}
	cols = graph.Reshape(cols, batch*outH*outW, k*k*cin)
	y := matMul(cols, graph.Reshape(kernel, k*k*cin, cout))
	return graph.Reshape(y, batch, outH, outW, cout)
}

// dense is layers.DenseWithBias(scope, x, outputs) for x [batch, features]: variables "weights"
// [features, outputs] and "biases" [outputs] in scope.In("dense"). In bf16-mixed the product
// runs in bfloat16 and its result is cast back to float32 before the bias.
func (nb *netBuilder) dense(scope *model.Scope, x *graph.Node, outputs int) *graph.Node {
	if nb.m.Precision.computeDType() == x.DType() {
		return layers.DenseWithBias(scope, x, outputs)
	}
	s := scope.In("dense")
	g := x.Graph()
	weights := s.VariableWithShape("weights", shapes.Make(x.DType(), x.Shape().Dimensions[1], outputs))
	if reg := regularizer.FromScope(s); reg != nil {
		reg(g, weights)
	}
	biases := s.VariableWithShape("biases", shapes.Make(x.DType(), outputs)).NodeValue(g)
	y := fromCompute(matMul(nb.toCompute(x), nb.toCompute(weights.NodeValue(g))))
	return graph.Add(y, graph.Reshape(biases, 1, outputs))
}

// zeroPadSpatial adds before and after zeros around axes 1 and 2 of x [batch, H, W, C]. It
// concatenates zeros rather than using graph.Pad so that the gradient flows.
func zeroPadSpatial(x *graph.Node, before, after int) *graph.Node {
	zeros := func(axis, n int) *graph.Node {
		dims := append([]int(nil), x.Shape().Dimensions...)
		dims[axis] = n
		return graph.Zeros(x.Graph(), shapes.Make(x.DType(), dims...))
	}
	for axis := 1; axis <= 2; axis++ {
		parts := []*graph.Node{x}
		if before > 0 {
			parts = append([]*graph.Node{zeros(axis, before)}, parts...)
		}
		if after > 0 {
			parts = append(parts, zeros(axis, after))
		}
		if len(parts) > 1 {
			x = graph.Concatenate(parts, axis)
		}
	}
	return x
}

// maxPool2x2 is graph.MaxPool(x).Window(2).Done() for x [batch, H, W, C]; with LayerOpsMatmul
// and even H and W it is a reshape to [batch, H/2, 2, W/2, 2, C] and a ReduceMax over the two
// window axes.
func (nb *netBuilder) maxPool2x2(x *graph.Node) *graph.Node {
	d := x.Shape().Dimensions
	if nb.m.LayerOps != LayerOpsMatmul || d[1]%2 != 0 || d[2]%2 != 0 {
		return graph.MaxPool(x).Window(2).Done()
	}
	return graph.ReduceMax(graph.Reshape(x, d[0], d[1]/2, 2, d[2]/2, 2, d[3]), 2, 4)
}
