package cifarlib

import (
	"math"

	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
)

// torchDefaultInit is PyTorch's nn.Linear default initialisation for a dense layer with fanIn inputs:
// weights and biases drawn from U(-1/sqrt(fanIn), 1/sqrt(fanIn)) (kaiming_uniform_ with
// a=sqrt(5), and the bias bound of reset_parameters), from the store's random state, so the
// same seed gives the same values.
//
// It is the head's initialiser. GoMLX's default (He normal, std sqrt(2/fanIn), zero bias) is
// made for a layer followed by a ReLU; on the head, which has none, it gives logits with a
// standard deviation of about sqrt(2*E[f^2]) (1.4 to 2.3 for the features of these models),
// and a loss at initialisation of ln(C) plus about half their variance (3.0 to 4.5 for 10
// classes, 6.1 to 6.8 for 100). The uniform bound is sqrt(6) times smaller in standard
// deviation (1/sqrt(3*fanIn)).
func torchDefaultInit(scope *model.Scope, fanIn int) model.VariableInitializer {
	bound := 1 / math.Sqrt(float64(max(fanIn, 1)))
	return func(g *graph.Graph, shape shapes.Shape) *graph.Node {
		return initializer.RandomUniformFn(scope, -bound, bound)(g, shape)
	}
}
