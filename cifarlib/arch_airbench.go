package cifarlib

import (
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
)

// airbench94's network, after make_net94 in Keller Jordan's airbench (KellerJordan/cifar10-airbench,
// PyPI's airbench 0.1.8, lib_airbench94.py), written for GoMLX from its description:
//
//	whiten   Conv2d(3, 24, 2, padding=0, bias=True), GELU      32x32 -> 31x31; weights from the data, not trained
//	block1   ConvGroup(24, 64)                                 31x31 -> 15x15
//	block2   ConvGroup(64, 256)                                15x15 -> 7x7
//	block3   ConvGroup(256, 256)                               7x7 -> 3x3
//	         MaxPool2d(3), flatten                             3x3 -> 1x1, [batch, 256]
//	head     Linear(256, NumClasses, bias=False), times 1/9
//
// A ConvGroup is conv3x3 ("same", no bias) -> MaxPool2d(2) -> BatchNorm -> GELU -> conv3x3 ->
// BatchNorm -> GELU. GELU is the exact erf form (PyTorch's nn.GELU(), GoMLX's activation.Gelu).
// The batch norms are airbench's: eps 1e-12, PyTorch momentum 0.4 (airbench's
// batchnorm_momentum 0.6 is 1 - PyTorch's), scale fixed at 1, bias trained (airbenchBatchNorm).
// The convolutions start as airbench's Conv.reset_parameters: PyTorch's default initialisation,
// then torch.nn.init.dirac_ on the first Cin output channels (airbenchConvInit). The scope names
// are in airbench_groups.go; the whitening filters are computed by WhiteningFilters.
const (
	// AirbenchWhitenWidth is the whitening layer's width: the 12 eigenvectors of the 2x2x3 patch
	// covariance and their negatives.
	AirbenchWhitenWidth = 2 * airbenchWhitenPatch
	// AirbenchScaling is the factor applied to the head's outputs (hyp['net']['scaling_factor']).
	AirbenchScaling = 1.0 / 9
	// AirbenchBatchNormMomentum is PyTorch's momentum of airbench's batch norms: running =
	// (1-0.4)*running + 0.4*batch (airbench's batchnorm_momentum 0.6 is 1 - PyTorch's).
	AirbenchBatchNormMomentum = 0.4
	// AirbenchBatchNormEpsilon is the epsilon of airbench's batch norms.
	AirbenchBatchNormEpsilon = 1e-12

	airbenchWhitenKernel = 2
	airbenchWhitenPatch  = airbenchWhitenKernel * airbenchWhitenKernel * 3
)

// AirbenchWidths are the widths of airbench94's three ConvGroups (hyp['net']['widths']).
var AirbenchWidths = [3]int{64, 256, 256}

// airbench94 builds ArchAirbench94 (see the table above) on x [batch, 32, 32, 3].
func (nb *netBuilder) airbench94(scope *model.Scope, x *graph.Node) *graph.Node {
	s := scope.In(AirbenchScopeWhiten)
	cin := x.Shape().Dimensions[3]
	s = s.WithInitializer(airbenchConvInit(s, airbenchWhitenKernel*airbenchWhitenKernel*cin))
	x = nb.convolutionPadded(s, x, AirbenchWhitenWidth, airbenchWhitenKernel, 1, true, false)
	s.Store().GetVariable(model.JoinPath(s.Scope(), "conv", "weights")).SetTrainable(false)
	x = nb.mark(AirbenchScopeWhiten, s, activation.Gelu(x))
	for i, width := range AirbenchWidths {
		bs := scope.In("%s", AirbenchBlocks[i])
		x = nb.mark(AirbenchBlocks[i], bs, nb.airbenchConvGroup(bs, x, width))
	}
	x = nb.mark("pool", nil, nb.maxPool(x, 3))
	dims := x.Shape().Dimensions
	x = nb.mark("flatten", nil, graph.Reshape(x, dims[0], dims[1]*dims[2]*dims[3]))
	hs := scope.In(AirbenchScopeHead)
	hs = hs.WithInitializer(torchDefaultInit(hs, x.Shape().Dimensions[1]))
	return nb.mark(AirbenchScopeHead, hs, graph.MulScalar(nb.denseBias(hs, x, nb.m.NumClasses, false), AirbenchScaling))
}

// airbenchConvGroup is airbench's ConvGroup: conv1 -> MaxPool2d(2) -> norm1 -> GELU -> conv2 ->
// norm2 -> GELU, the convolutions 3x3 "same" without bias.
func (nb *netBuilder) airbenchConvGroup(scope *model.Scope, x *graph.Node, width int) *graph.Node {
	conv := func(name string, x *graph.Node) *graph.Node {
		s := scope.In("%s", name)
		s = s.WithInitializer(airbenchConvInit(s, 3*3*x.Shape().Dimensions[3]))
		return nb.convolution(s, x, width, 3, 1, false)
	}
	x = nb.maxPool2x2(conv(AirbenchScopeConv1, x))
	x = activation.Gelu(nb.airbenchBatchNorm(scope.In(AirbenchScopeNorm1), x))
	x = conv(AirbenchScopeConv2, x)
	return activation.Gelu(nb.airbenchBatchNorm(scope.In(AirbenchScopeNorm2), x))
}

// airbenchBatchNorm is airbench's BatchNorm: PyTorch's BatchNorm2d with eps 1e-12 and momentum
// 0.4, its weight (scale) fixed at 1 and its bias (offset) trained (see torchBatchNorm).
func (nb *netBuilder) airbenchBatchNorm(scope *model.Scope, x *graph.Node) *graph.Node {
	return nb.torchBatchNorm(scope, x, torchBatchNormConfig{momentum: AirbenchBatchNormMomentum,
		epsilon: AirbenchBatchNormEpsilon, fixedScale: true})
}

// airbenchConvInit is airbench's Conv.reset_parameters for a convolution with fanIn =
// k*k*Cin: kernels drawn as PyTorch's nn.Conv2d default (torchDefaultInit), then
// torch.nn.init.dirac_ on the first Cin output channels (output channel o < Cin passes input
// channel o through at the kernel's centre, (k/2, k/2), and sees nothing else); biases start
// at zero.
func airbenchConvInit(scope *model.Scope, fanIn int) model.VariableInitializer {
	uniform := torchDefaultInit(scope, fanIn)
	return func(g *graph.Graph, shape shapes.Shape) *graph.Node {
		if shape.Rank() != 4 {
			return graph.Zeros(g, shape)
		}
		// The masks are made in the graph, from the kernel's indices: as constants of its size
		// they were written into the initialisation program's text (20 MB of it for airbench94,
		// most of the 2 s its graph took to build under load) and parsed again by XLA.
		d := shape.Dimensions
		kh, kw, cin := d[0], d[1], d[2]
		index := func(axis int) *graph.Node { return graph.Iota(g, shapes.Make(dtypes.Int32, d...), axis) }
		scalar := func(v int) *graph.Node { return graph.Scalar(g, dtypes.Int32, v) }
		keep := graph.GreaterOrEqual(index(3), scalar(cin)) // output channel o >= Cin
		dirac := graph.LogicalAnd(graph.LogicalAnd(graph.Equal(index(0), scalar(kh/2)), graph.Equal(index(1), scalar(kw/2))),
			graph.Equal(index(2), index(3))) // the centre, input channel i == o
		return graph.Add(graph.Mul(uniform(g, shape), graph.ConvertDType(keep, shape.DType)), graph.ConvertDType(dirac, shape.DType))
	}
}
