package cifarlib

import (
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
)

// linear builds ArchLinear: flatten the pixels, one dense layer to the head.
func (nb *netBuilder) linear(scope *model.Scope, x *graph.Node) *graph.Node {
	batch := x.Shape().Dimensions[0]
	x = nb.mark("flatten", nil, graph.Reshape(x, batch, data.ImageBytes))
	return nb.head(scope, x)
}

// cnn builds ArchCNN: three 3x3 convolutions (16, 32, 64 channels, ReLU, LeCun-normal
// initialisation: see init.go), each followed by a 2x2 max-pool, then flatten ([batch, 4*4*64])
// and the dense head. nb.m.LayerOps says how the convolutions and pools are computed.
func (nb *netBuilder) cnn(scope *model.Scope, x *graph.Node) *graph.Node {
	for i, channels := range []int{16, 32, 64} {
		name := []string{"conv1", "conv2", "conv3"}[i]
		s := scope.In("%s", name)
		x = nb.convolution(s.WithInitializer(lecunNormalInit(s, 3*3*x.Shape().Dimensions[3])), x, channels, 3, 1, true)
		pool := []string{"pool1", "pool2", "pool3"}[i]
		if nb.m.LayerOps == LayerOpsMatmul {
			// ReLU and max-pooling commute (both are monotone), so the matmul lowering pools
			// first and applies the ReLU to a quarter of the values: the same function, with the
			// gradient differing only in ties.
			x = nb.mark(name, s, x)
			x = nb.mark(pool, nil, activation.Relu(nb.maxPool2x2(x)))
			continue
		}
		x = nb.mark(name, s, activation.Relu(x))
		x = nb.mark(pool, nil, nb.maxPool2x2(x))
	}
	dims := x.Shape().Dimensions
	x = nb.mark("flatten", nil, graph.Reshape(x, dims[0], dims[1]*dims[2]*dims[3]))
	return nb.head(scope, x)
}

// head is the classifier: a dense layer with bias to NumClasses outputs, in scope "head" (see
// netBuilder.dense for its precision), initialised as PyTorch's nn.Linear (torchDefaultInit).
func (nb *netBuilder) head(scope *model.Scope, x *graph.Node) *graph.Node {
	s := scope.In("head")
	s = s.WithInitializer(torchDefaultInit(s, x.Shape().Dimensions[1]))
	return nb.mark("head", s, nb.dense(s, x, nb.m.NumClasses))
}
