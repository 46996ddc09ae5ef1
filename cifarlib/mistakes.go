package cifarlib

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/train"
)

// Mistake is one shape mistake made on purpose, and the error cifarlib gives for it.
type Mistake struct {
	// Name says what was done wrong, e.g. "channels-first images [8, 3, 32, 32]".
	Name string
	// Err is cifarlib's typed error for it (nil would mean the mistake went unnoticed).
	Err error
}

// ShapeMistakes makes each of the usual shape mistakes of the PyTorch story once, with the
// examples of b (at least 2) and the model m built for b's dataset, and returns what cifarlib
// says about each: a head too narrow for the labels (the same model with a head of
// narrowHead outputs), channels-first images, a single image without a batch axis, fewer labels
// than images, float labels and one-hot labels. The graph-level checks run when the graph is
// built on backend (nothing is executed); the batch checks run on the host (Model.CheckBatch).
func ShapeMistakes(backend compute.Backend, m *Model, narrowHead int, b *data.Batch) ([]Mistake, error) {
	n := b.Size()
	if n < 2 {
		return nil, fmt.Errorf("cifarlib: ShapeMistakes needs a batch of at least 2 examples, got %d", n)
	}
	narrow, err := NewModel(m.Spec, m.Arch).Head(narrowHead).Backend(backend).Done()
	if err != nil {
		return nil, err
	}
	pixels, labels := b.Host.Images, b.Host.Labels
	floats := make([]float32, n)
	oneHot := make([]float32, n*m.Spec.NumClasses)
	for i, l := range labels {
		floats[i] = float32(l)
		oneHot[i*m.Spec.NumClasses+int(l)] = 1
	}
	step := func(mm *Model, images, labels *tensors.Tensor) error {
		_, err := mm.LossOn(backend, images, labels, LossOptions{Guard: GuardStatic})
		return err
	}
	batch := func(mm *Model, labels *tensors.Tensor) error {
		return mm.CheckBatch(train.Batch{Inputs: []*tensors.Tensor{b.Images}, Labels: []*tensors.Tensor{labels}})
	}
	return []Mistake{
		{fmt.Sprintf("head too small (%d outputs, %d classes)", narrowHead, m.Spec.NumClasses), step(narrow, b.Images, b.Labels)},
		{fmt.Sprintf("channels-first images [%d, 3, 32, 32]", n),
			step(m, tensors.FromFlatDataAndDimensions(pixels, n, data.ImageChannels, data.ImageHeight, data.ImageWidth), b.Labels)},
		{"a single image without a batch axis [32, 32, 3]",
			step(m, tensors.FromFlatDataAndDimensions(pixels[:data.ImageBytes], data.ImageHeight, data.ImageWidth, data.ImageChannels), b.Labels)},
		{fmt.Sprintf("%d images but %d labels", n, n-1), batch(m, tensors.FromFlatDataAndDimensions(labels[:n-1], n-1, 1))},
		{fmt.Sprintf("float labels [%d, 1]", n), step(m, b.Images, tensors.FromFlatDataAndDimensions(floats, n, 1))},
		{fmt.Sprintf("one-hot labels [%d, %d] into a %d-output head", n, m.Spec.NumClasses, narrowHead),
			batch(narrow, tensors.FromFlatDataAndDimensions(oneHot, n, m.Spec.NumClasses))},
	}, nil
}
