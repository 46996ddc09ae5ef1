package cifarlib

import (
	"fmt"

	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/layers/norm"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
)

// resnet builds a CIFAR ResNet of BasicBlocks: a 3x3 stride-1 stem with stemChannels (no
// max-pool), one stage per entry of stages (the first at stride 1, the others halving the
// resolution), blocksPerStage BasicBlocks per stage, global average pooling and the dense head.
//
// zeroPadShortcut selects He et al.'s CIFAR "option A" shortcut (strided identity with the new
// channels zero-padded, no parameters) used by ResNet-20; otherwise a 1x1 convolution + batch
// norm projection is used when the shape changes (ResNet-18, as in torchvision and kuangliu's
// CIFAR ResNet-18).
func (nb *netBuilder) resnet(scope *model.Scope, x *graph.Node, stemChannels int, stages []int,
	blocksPerStage int, zeroPadShortcut bool) *graph.Node {
	s := scope.In("stem")
	x = nb.conv(s.In("conv"), x, stemChannels, 3, 1)
	x = activation.Relu(nb.batchNorm(s.In("bn"), x))
	nb.mark("stem", s, x)
	for stage, channels := range stages {
		for block := range blocksPerStage {
			stride := 1
			if stage > 0 && block == 0 {
				stride = 2
			}
			name := fmt.Sprintf("stage%d/block%d", stage+1, block+1)
			var bs *model.Scope
			if block == 0 {
				bs = scope.In("stage%d", stage+1)
			} else {
				bs = scope.Shared("stage%d", stage+1)
			}
			bs = bs.In("block%d", block+1)
			x = nb.mark(name, bs, nb.basicBlock(bs, x, channels, stride, zeroPadShortcut))
		}
	}
	x = nb.mark("avgpool", nil, graph.ReduceMean(x, 1, 2))
	return nb.head(scope, x)
}

// basicBlock is conv3x3(stride)-BN-ReLU-conv3x3-BN plus the shortcut, then ReLU.
func (nb *netBuilder) basicBlock(scope *model.Scope, x *graph.Node, channels, stride int, zeroPad bool) *graph.Node {
	inChannels := x.Shape().Dimensions[3]
	y := nb.conv(scope.In("conv1"), x, channels, 3, stride)
	y = activation.Relu(nb.batchNorm(scope.In("bn1"), y))
	y = nb.conv(scope.In("conv2"), y, channels, 3, 1)
	y = nb.residualBatchNorm(scope.In("bn2"), y)
	shortcut := x
	if stride != 1 || inChannels != channels {
		if zeroPad {
			shortcut = graph.Slice(x, graph.AxisRange(), graph.AxisRange().Stride(stride),
				graph.AxisRange().Stride(stride), graph.AxisRange())
			// Zero-pad the new channels (Pad has no gradient in GoMLX; concatenating zeros does).
			extra := channels - inChannels
			dims := shortcut.Shape().Dimensions
			before := graph.Zeros(x.Graph(), shapes.Make(x.DType(), dims[0], dims[1], dims[2], extra/2))
			after := graph.Zeros(x.Graph(), shapes.Make(x.DType(), dims[0], dims[1], dims[2], extra-extra/2))
			shortcut = graph.Concatenate([]*graph.Node{before, shortcut, after}, 3)
		} else {
			shortcut = nb.conv(scope.In("shortcut_conv"), x, channels, 1, stride)
			shortcut = nb.batchNorm(scope.In("shortcut_bn"), shortcut)
		}
	}
	return activation.Relu(graph.Add(y, shortcut))
}

// conv is a bias-free "same"-padded convolution (batch norm follows it).
func (nb *netBuilder) conv(scope *model.Scope, x *graph.Node, channels, kernel, stride int) *graph.Node {
	return nb.convolution(scope, x, channels, kernel, stride, false)
}

// batchNorm normalizes over batch and pixels per channel, with the variant chosen for the backend.
func (nb *netBuilder) batchNorm(scope *model.Scope, x *graph.Node) *graph.Node {
	return norm.BatchNorm(scope, x, -1).Momentum(0.9).Epsilon(1e-5).
		UseBackendInference(nb.m.BatchNorm == BatchNormBackendOps).Done()
}

// residualBatchNorm is the batch norm that ends a residual branch, started with a zero scale
// (gamma), so that the branch starts as nothing and its block as the shortcut alone:
// torchvision's zero_init_residual=True and timm's zero_init_last (Goyal et al. 2017). Without
// it each block adds its branch's variance to the shortcut's, and the features reaching the head
// grow with depth. The scale norm.BatchNorm created is re-requested with a zero initialiser (the
// last initialiser set is the one used); a value already there (a checkpoint, a transfer) is kept.
func (nb *netBuilder) residualBatchNorm(scope *model.Scope, x *graph.Node) *graph.Node {
	y := nb.batchNorm(scope, x)
	path := model.JoinPath(scope.Scope(), "batch_normalization", "scale")
	scope.Store().VariableWithShape(path, shapes.Make(x.DType(), x.Shape().Dimensions[3]), initializer.Zero)
	return y
}
