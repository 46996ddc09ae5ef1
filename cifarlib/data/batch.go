package data

import (
	"fmt"

	"github.com/gomlx/gomlx/core/tensors"
)

// Batch is a run of consecutive examples of a split, as the model takes them: the Go side of
// PyTorch's `images, labels = next(iter(loader))`.
type Batch struct {
	// Images is float32 [n, 32, 32, 3], normalised with the Spec's mean and standard deviation.
	Images *tensors.Tensor
	// Labels is int32 [n, 1], in the Spec's label set.
	Labels *tensors.Tensor
	// Host is the same batch on the host: example indices, labels and normalised pixels.
	Host *HostBatch
}

// Size is the number of examples in the batch.
func (b *Batch) Size() int { return b.Host.Size() }

// Batch returns examples [start, start+n) of r, in order and without augmentation, normalised
// as a Dataset normalises them, as tensors and as a HostBatch (Number 0). It fails when the range
// does not lie within the records or a label is outside the Spec's classes.
func (r *Records) Batch(start, n int) (*Batch, error) {
	if r == nil {
		return nil, fmt.Errorf("data: Batch: records are nil: load them with LoadSplit or LoadPrepared")
	}
	if n < 1 || start < 0 || start+n > r.Len() {
		return nil, fmt.Errorf("data: Batch(%d, %d) of %s: examples [%d, %d) are not within its %d records: "+
			"ask for 1 to %d examples from start 0", start, n, r.Source, start, start+n, r.Len(), r.Len())
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	norm, err := newNormalizer(r.Spec.Mean, r.Spec.Std)
	if err != nil {
		return nil, fmt.Errorf("data: Batch of %s: %w", r.Source, err)
	}
	hb := &HostBatch{Examples: make([]int, n), Labels: make([]int32, n), Images: make([]float32, n*ImageBytes)}
	for k := range n {
		hb.Examples[k] = start + k
		hb.Labels[k] = int32(r.Label(start + k))
	}
	norm.DecodeImages(r, start, n, hb.Images)
	return &Batch{
		Images: tensors.FromFlatDataAndDimensions(hb.Images, n, ImageHeight, ImageWidth, ImageChannels),
		Labels: tensors.FromFlatDataAndDimensions(hb.Labels, n, 1),
		Host:   hb,
	}, nil
}
