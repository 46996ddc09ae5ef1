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
	// LayerOpsNative uses GoMLX's layers.Convolution (graph.Convolve), the backend's convolution,
	// and maxPoolSelect, a max-pool of slices and selects whose gradient XLA fuses (graph.MaxPool's
	// select-and-scatter is slow on XLA CPU). XLA's are fast; it is the default.
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
	return nb.convolutionPadded(scope, x, channels, kernel, stride, withBias, true)
}

// convolutionPadded is convolution, "same"-padded when same, else unpadded (PyTorch's
// padding=0: [batch, (H-kernel)/stride+1, (W-kernel)/stride+1, channels]).
func (nb *netBuilder) convolutionPadded(scope *model.Scope, x *graph.Node, channels, kernel, stride int, withBias, same bool) *graph.Node {
	mixed := nb.m.Precision.computeDType() != x.DType()
	if nb.m.LayerOps != LayerOpsMatmul && !mixed {
		conv := layers.Convolution(scope, x).Channels(channels).KernelSize(kernel).Strides(stride).UseBias(withBias)
		if same {
			return conv.PadSame().Done()
		}
		return conv.NoPadding().Done()
	}
	s := scope.In("conv")
	g := x.Graph()
	cin := x.Shape().Dimensions[3]
	weights := s.VariableWithShape("weights", shapes.Make(x.DType(), kernel, kernel, cin, channels))
	xc, wc := nb.toCompute(x), nb.toCompute(weights.NodeValue(g))
	var y *graph.Node
	switch {
	case nb.m.LayerOps == LayerOpsMatmul && same:
		y = im2colConvolution(xc, wc, stride)
	case nb.m.LayerOps == LayerOpsMatmul:
		y = im2colConvolutionPadded(xc, wc, stride, 0, 0)
	case same:
		y = graph.Convolve(xc, wc).StridePerAxis(stride, stride).PadSame().Done()
	default:
		y = graph.Convolve(xc, wc).StridePerAxis(stride, stride).NoPadding().Done()
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
	k := kernel.Shape().Dimensions[0]
	return im2colConvolutionPadded(x, kernel, stride, (k-1)/2, k/2)
}

// im2colConvolutionPadded is im2colConvolution with before and after zeros around each spatial
// axis: the output is [batch, (H+before+after-k)/stride+1, (W+before+after-k)/stride+1, Cout].
func im2colConvolutionPadded(x, kernel *graph.Node, stride, before, after int) *graph.Node {
	dims := x.Shape().Dimensions
	batch, h, w, cin := dims[0], dims[1], dims[2], dims[3]
	k, cout := kernel.Shape().Dimensions[0], kernel.Shape().Dimensions[3]
	outH, outW := (h+before+after-k)/stride+1, (w+before+after-k)/stride+1
	xp := zeroPadSpatial(x, before, after)
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
	return nb.denseBias(scope, x, outputs, true)
}

// denseBias is dense, without the "biases" variable and its addition unless withBias.
func (nb *netBuilder) denseBias(scope *model.Scope, x *graph.Node, outputs int, withBias bool) *graph.Node {
	if nb.m.Precision.computeDType() == x.DType() {
		return layers.Dense(scope, x, withBias, outputs)
	}
	s := scope.In("dense")
	g := x.Graph()
	weights := s.VariableWithShape("weights", shapes.Make(x.DType(), x.Shape().Dimensions[1], outputs))
	if reg := regularizer.FromScope(s); reg != nil {
		reg(g, weights)
	}
	y := fromCompute(matMul(nb.toCompute(x), nb.toCompute(weights.NodeValue(g))))
	if !withBias {
		return y
	}
	biases := s.VariableWithShape("biases", shapes.Make(x.DType(), outputs)).NodeValue(g)
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

// maxPool2x2 is graph.MaxPool(x).Window(2).Done() for x [batch, H, W, C] (see maxPool).
func (nb *netBuilder) maxPool2x2(x *graph.Node) *graph.Node { return nb.maxPool(x, 2) }

// maxPool is graph.MaxPool(x).Window(k).Done() for x [batch, H, W, C], PyTorch's
// nn.MaxPool2d(k): windows of k x k at stride k, the last H%k rows and W%k columns left out.
// With LayerOpsNative it is maxPoolSelect (the same function and gradient, without XLA's
// select-and-scatter). With LayerOpsMatmul it drops those rows and columns, reshapes to
// [batch, H/k, k, W/k, k, C] and takes a ReduceMax over the two window axes.
func (nb *netBuilder) maxPool(x *graph.Node, k int) *graph.Node {
	d := x.Shape().Dimensions
	if nb.m.LayerOps != LayerOpsMatmul {
		return maxPoolSelect(x, k)
	}
	h, w := d[1]/k, d[2]/k
	if d[1] != h*k || d[2] != w*k {
		x = graph.Slice(x, graph.AxisRange(), graph.AxisRange(0, h*k), graph.AxisRange(0, w*k), graph.AxisRange())
	}
	return graph.ReduceMax(graph.Reshape(x, d[0], h, k, w, k, d[3]), 2, 4)
}
