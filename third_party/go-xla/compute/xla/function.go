// Copyright 2023-2026 The GoMLX Authors. SPDX-License-Identifier: Apache-2.0

package xla

import (
	"slices"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/notimplemented"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/go-xla/stablehlo"
	"github.com/gomlx/go-xla/types/shardy"
	"github.com/pkg/errors"
)

// Function implements compute.Function for XLA.
type Function struct {
	notimplemented.Function
	builder *Builder
	parent  *Function // parent function if this is a closure.
	fn      *stablehlo.Function
	name    string

	parameterNames  []string
	parameterShapes []shapes.Shape
	parameterSpecs  []*compute.ShardingSpec

	// returned indicates Return() was called.
	returned bool

	// outputs stores the return values set by Return().
	outputs         []*Node
	outputShardings []*shardy.ShardingSpec
}

var _ compute.Function = (*Function)(nil)

// Name returns the name of this function.
func (f *Function) Name() string {
	return f.name
}

// Parent returns the parent function if this is a closure.
func (f *Function) Parent() compute.Function {
	return f.parent
}

// Builder returns the builder for this function.
func (f *Function) Builder() compute.Builder {
	return f.builder
}

// Shape returns the shape of a value in the function.
func (f *Function) Shape(v compute.Value) (shapes.Shape, error) {
	var s shapes.Shape
	n, ok := v.(*Node)
	if !ok {
		return s, errors.Errorf("value is not a Node for a XLA backend, instead got a %T", v)
	}
	if err := f.CheckValid(); err != nil {
		return s, err
	}
	return n.shape, nil
}

func newFunction(b *Builder, fn *stablehlo.Function, name string) *Function {
	return &Function{
		Function: notimplemented.Function{
			ErrFn: func(op compute.OpType) error {
				return errors.Wrapf(compute.ErrNotImplemented, "%s not implemented for XLA backend", op)
			},
		},
		builder: b,
		fn:      fn,
		name:    name,
	}
}

// Closure creates a new closure function, within this function.
func (f *Function) Closure() (compute.Function, error) {
	if err := f.CheckValid(); err != nil {
		return nil, err
	}
	closure := newFunction(f.builder, f.fn.Closure(), "")
	closure.parent = f
	return closure, nil
}

// CheckValid returns an error if the builder or the function are not ok.
func (f *Function) CheckValid() error {
	if f == nil || f.fn == nil {
		return errors.Errorf("function is nil or undefined for %q", BackendName)
	}
	return f.builder.CheckValid()
}

// verifyAndCastValues sanity checks that the values (compute.Op) are valid and created with this builder.
// It returns the underlying *Node of the values.
func (f *Function) verifyAndCastValues(name string, values ...compute.Value) ([]*Node, error) {
	if err := f.CheckValid(); err != nil {
		return nil, err
	}
	nodes := make([]*Node, len(values))
	for i, input := range values {
		if input == nil {
			return nil, errors.Errorf("nil Op given as an input to %q", name)
		}
		node, ok := input.(*Node)
		if !ok {
			return nil, errors.Errorf(
				"nil or invalid Op (%T: %v) given as an input to %q, it must be an input created by the same "+
					"backend builder (%s:%s)", input, input, name, f.builder.backend.Name(), f.builder.name)
		}
		if node.builder != f.builder {
			return nil, errors.Errorf(
				"input given to parameter #%d (%q) was created with a different builder (%s) than the builder"+
					" (%s) it is being used in -- Ops cannot cross to different builders",
				i, name, node.builder.Name(), f.builder.Name())
		}
		nodes[i] = node
	}
	return nodes, nil
}

func (f *Function) newNode(value *stablehlo.Value) *Node {
	return &Node{
		value:   value,
		shape:   ShapeFromXLA(value.Shape()),
		builder: f.builder,
	}
}

// Parameter creates an input parameter for this function.
func (f *Function) Parameter(name string, shape shapes.Shape, sharding *compute.ShardingSpec) (
	compute.Value, error) {
	if err := f.CheckValid(); err != nil {
		return nil, err
	}
	if shape.IsDynamic() {
		return nil, errors.Errorf(
			"dynamic shapes are not supported by the XLA backend, you have to recompile to each input shape, or use "+
			"padding (usually a mix of both): %s", shape)
	}
	normalizedName := stablehlo.NormalizeIdentifier(name)
	if slices.Index(f.parameterNames, normalizedName) != -1 {
		if name == normalizedName {
			return nil, errors.Errorf("parameter named %q already exists", name)
		}
		return nil, errors.Errorf("parameter named %q (normalized to %q) already exists",
			name, normalizedName)
	}
	f.parameterNames = append(f.parameterNames, normalizedName)
	f.parameterShapes = append(f.parameterShapes, shape)
	f.parameterSpecs = append(f.parameterSpecs, sharding)
	var shardySpec *shardy.ShardingSpec
	if sharding != nil {
		var err error
		shardySpec, err = f.builder.shardingSpecToShardy(sharding)
		if err != nil {
			return nil, errors.WithMessagef(err, "while creating sharding spec for parameter %q", name)
		}
	}
	value, err := f.fn.NamedInputWithSharding(name, ShapeToXLA(shape), shardySpec)
	if err != nil {
		return nil, errors.WithMessagef(err, "while building parameter %q", name)
	}
	return f.newNode(value), nil
}

// Constant creates a constant in the function with the given flat values and the shape defined by the dimensions.
func (f *Function) Constant(flat any, dimensions ...int) (compute.Value, error) {
	if err := f.CheckValid(); err != nil {
		return nil, err
	}
	if flat == nil {
		return nil, errors.Errorf("nil value given to Constant")
	}
	value, err := f.fn.ConstantFromFlatAndDimensions(flat, dimensions...)
	if err != nil {
		return nil, errors.WithMessagef(err, "while building op Constant()")
	}
	return f.newNode(value), nil
}

// Return marks the outputs of this function.
func (f *Function) Return(outputs []compute.Value, shardings []*compute.ShardingSpec) error {
	if err := f.CheckValid(); err != nil {
		return err
	}
	if f.returned {
		return errors.Errorf("Return() already called for function %q", f.name)
	}
	if len(outputs) == 0 {
		return errors.Errorf("Return() requires at least one output")
	}

	outputNodes, err := f.verifyAndCastValues("Return", outputs...)
	if err != nil {
		return err
	}

	// Convert shardings if provided
	var shardySpecs []*shardy.ShardingSpec
	if len(shardings) > 0 {
		shardySpecs = make([]*shardy.ShardingSpec, len(outputs))
		for i, spec := range shardings {
			shardySpecs[i], err = f.builder.shardingSpecToShardy(spec)
			if err != nil {
				return errors.WithMessagef(err, "failed to convert sharding spec for output #%d", i)
			}
		}
	}

	f.outputs = outputNodes
	f.outputShardings = shardySpecs
	f.returned = true

	// Call the stablehlo Return
	outputValues := make([]*stablehlo.Value, len(outputs))
	for i, node := range outputNodes {
		outputValues[i] = node.value
	}
	err = f.fn.ReturnWithShardingAndAttributes(outputValues, shardySpecs, nil)
	if err != nil {
		return errors.WithMessagef(err, "failed to set return for function %q", f.name)
	}

	return nil
}

// Sort sorts one or more tensors along the specified axis using a comparator function.
func (f *Function) Sort(comparator compute.Function, axis int, isStable bool, inputs ...compute.Value) ([]compute.Value, error) {
	nodes, err := f.verifyAndCastValues("Sort", inputs...)
	if err != nil {
		return nil, err
	}

	comparatorF, ok := comparator.(*Function)
	if !ok {
		return nil, errors.Errorf("Sort comparator function must be of type *xla.Function, but got %T", comparator)
	}
	if comparatorF.parent != f {
		return nil, errors.Errorf("Sort comparator must be a closure of the current function")
	}

	inputValues := make([]*stablehlo.Value, len(nodes))
	for i, n := range nodes {
		inputValues[i] = n.value
	}

	outputValues, err := stablehlo.Sort(comparatorF.fn, axis, isStable, inputValues...)
	if err != nil {
		return nil, err
	}

	outputNodes := make([]compute.Value, len(outputValues))
	for i, v := range outputValues {
		outputNodes[i] = f.newNode(v)
	}
	return outputNodes, nil
}

// While executes bodyFn repeatedly while condFn returns true.
func (f *Function) While(cond, body compute.Function, initialState ...compute.Value) ([]compute.Value, error) {
	nodes, err := f.verifyAndCastValues("While", initialState...)
	if err != nil {
		return nil, err
	}

	condF, ok := cond.(*Function)
	if !ok {
		return nil, errors.Errorf("While cond function must be of type *xla.Function, but got %T", cond)
	}
	if condF.parent != f {
		return nil, errors.Errorf("While cond must be a closure of the current function")
	}

	bodyF, ok := body.(*Function)
	if !ok {
		return nil, errors.Errorf("While body function must be of type *xla.Function, but got %T", body)
	}
	if bodyF.parent != f {
		return nil, errors.Errorf("While body must be a closure of the current function")
	}

	inputValues := make([]*stablehlo.Value, len(nodes))
	for i, n := range nodes {
		inputValues[i] = n.value
	}

	outputValues, err := stablehlo.While(condF.fn, bodyF.fn, inputValues...)
	if err != nil {
		return nil, err
	}

	outputNodes := make([]compute.Value, len(outputValues))
	for i, v := range outputValues {
		outputNodes[i] = f.newNode(v)
	}
	return outputNodes, nil
}

// If executes one of two branches based on a predicate.
func (f *Function) If(pred compute.Value, trueBranch, falseBranch compute.Function) ([]compute.Value, error) {
	nodes, err := f.verifyAndCastValues("If", pred)
	if err != nil {
		return nil, err
	}
	predNode := nodes[0]

	trueF, ok := trueBranch.(*Function)
	if !ok {
		return nil, errors.Errorf("If trueBranch function must be of type *xla.Function, but got %T", trueBranch)
	}
	if trueF.parent != f {
		return nil, errors.Errorf("If trueBranch must be a closure of the current function")
	}

	falseF, ok := falseBranch.(*Function)
	if !ok {
		return nil, errors.Errorf("If falseBranch function must be of type *xla.Function, but got %T", falseBranch)
	}
	if falseF.parent != f {
		return nil, errors.Errorf("If falseBranch must be a closure of the current function")
	}

	outputValues, err := stablehlo.If(predNode.value, trueF.fn, falseF.fn)
	if err != nil {
		return nil, err
	}

	outputNodes := make([]compute.Value, len(outputValues))
	for i, v := range outputValues {
		outputNodes[i] = f.newNode(v)
	}
	return outputNodes, nil
}
