package optimizers

// The fed hyper-parameters of the train step: every numeric setting that does not shape the
// program is read by the graph from a non-trainable variable of the model's Store, so one
// compiled train step serves every value (training.Programs and training.ProgramKey).

import (
	"fmt"
	"maps"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// hyperScope is where the fed values live: one scalar variable per value and dtype, at
// hyperScope/DTYPE/NAME. They are not saved in checkpoints (the run's settings are, in its
// parameters and run.json): every run sets them from its own (SetValues).
var hyperScope = model.JoinPath("/", "hyper")

// hyperLearningRate is the fed value of the optimizer's LearningRate: GoMLX's learning-rate
// variable, which the constant schedule leaves at it, and the triangle's peak.
const hyperLearningRate = "learning_rate"

// Values are the fed values of a run, by name, each computed in float64 exactly as the constant
// it replaces was (a float32 one, such as the triangle's, converted losslessly). The graph reads
// each converted to its dtype as graph.Scalar converts a constant (shapes.CastAsDType), so a
// program with fed values computes bit for bit what the program with constants computed.
type Values map[string]float64

// Fed returns the values that the optimizer o of plan p, its schedule and lookahead are fed,
// from the graph parts that read them (each part's fed method computes what its graph reads,
// from the same expressions). The values of the other parts of a train step (the loss's) are
// the caller's to add.
func (p Plan) Fed(o Optimizer) Values {
	lr := learningRate(o)
	h := Values{hyperLearningRate: lr}
	var n Nesterov // zero for the other algorithms, whose graphs read none of its values
	if o, ok := o.(Nesterov); ok {
		n = o
	}
	maps.Copy(h, newNesterov(lr, n.Momentum, n.WeightDecay, n.BiasScaler, p.Batch, p.WhitenBiasSteps).fed())
	maps.Copy(h, airbenchTriangle(p.Steps).fed(lr))
	maps.Copy(h, p.cosine(o).fed())
	maps.Copy(h, lookaheadFed(p.Steps))
	return h
}

// Scalar returns value as a scalar of dtype in g, fed at run time, under name: the value of the
// non-trainable variable hyperScope/DTYPE/NAME of g's Store, created with value on first use (a
// later run that reuses the compiled program sets it to its own, SetValues). In a graph without
// a Store it is the constant graph.Scalar(g, dtype, value), the same number.
func Scalar(g *graph.Graph, name string, dtype dtypes.DType, value float64) *graph.Node {
	store := model.GetStore(g)
	if store == nil {
		return graph.Scalar(g, dtype, value)
	}
	path := model.JoinPath(hyperScope, strings.ToLower(dtype.String()), name)
	v := store.GetVariable(path)
	if v == nil {
		var err error
		if v, err = store.CreateVariable(path, hyperTensor(value, dtype)); err != nil {
			panic(fmt.Errorf("optimizers: fed value %s: %w", name, err))
		}
		v.SetTrainable(false)
	}
	return v.NodeValue(g)
}

// hyperTensor is value as a scalar of dtype, converted as graph.Scalar converts a constant.
func hyperTensor(value float64, dtype dtypes.DType) *tensors.Tensor {
	return tensors.MustFromAnyValue(shapes.CastAsDType(value, dtype))
}

// SetValues sets every fed value of store (under hyperScope) and GoMLX's learning-rate variable
// (which the constant schedule leaves at the learning rate, and GoMLX's optimizers and nesterov
// read) from h, converted to each variable's dtype: a run that reuses kept programs feeds its
// own values. A fed value that h lacks is an error.
func SetValues(store *model.Store, h Values) error {
	lrPath := model.JoinPath("/", optimizer.Scope, optimizer.ParamLearningRate)
	for v := range store.IterVariables() {
		var name string
		switch {
		case IsFed(v):
			name = v.Name()
		case v.Path() == lrPath:
			name = hyperLearningRate
		default:
			continue
		}
		value, found := h[name]
		if !found {
			return fmt.Errorf("optimizers: the kept program reads a value %q (variable %s) that this run does not set", name, v.Path())
		}
		if err := v.SetValue(hyperTensor(value, v.DType())); err != nil {
			return fmt.Errorf("optimizers: setting the fed value %s: %w", v.Path(), err)
		}
	}
	return nil
}

// IsFed says whether v holds a fed value (not saved in checkpoints).
func IsFed(v *model.Variable) bool {
	return strings.HasPrefix(v.Path(), hyperScope+model.ScopeSeparator)
}
