package training

import (
	"context"
	"iter"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/train"
)

// stepDataset yields the batches of global steps [start, end) of an endless, deterministic
// dataset (one whose batch k depends only on its seed and k). The first start batches are
// drawn and dropped, so a run resumed at step start sees exactly the batches an uninterrupted
// run would have seen. The iteration ends early, and cleanly for GoMLX's loop (as the end of
// an epoch), when ctx is cancelled; interrupted then says so.
//
// It also counts, on the host, the labels fed to training that lie outside [0, headWidth):
// with GoMLX's plain loss those examples contribute exactly zero loss.
type stepDataset struct {
	inner      train.Dataset
	start, end int
	ctx        context.Context
	headWidth  int
	// watch hears of each step as it starts (the StepWatch of ctx; nil: none).
	watch *StepWatch

	interrupted      bool
	seen, outOfRange int64
	// shapes are those of the last batch yielded, inputs then labels (for compileTrainStep).
	shapes []shapes.Shape
}

// Name implements train.Dataset.
func (d *stepDataset) Name() string { return d.inner.Name() }

// Iter implements train.Dataset.
func (d *stepDataset) Iter() iter.Seq2[train.Batch, error] {
	return func(yield func(train.Batch, error) bool) {
		step := 0
		if d.start >= d.end {
			return
		}
		for batch, err := range d.inner.Iter() {
			if err != nil {
				yield(train.Batch{}, err)
				return
			}
			if step < d.start {
				_ = batch.Finalize()
				step++
				continue
			}
			if d.ctx.Err() != nil {
				_ = batch.Finalize()
				d.interrupted = true
				return
			}
			d.countLabels(batch)
			d.shapes = batchShapes(batch)
			d.watch.training(step + 1)
			if testStepDelay > 0 {
				time.Sleep(testStepDelay)
			}
			if !yield(batch, nil) {
				return
			}
			step++
			if step >= d.end {
				return
			}
		}
	}
}

// testStepDelay lengthens every step (0: not at all): set only in a test build
// (stepdelay_test_build.go, TestStepDelayEnv).
var testStepDelay time.Duration

// countLabels adds the batch's labels to seen and outOfRange.
func (d *stepDataset) countLabels(batch train.Batch) {
	if len(batch.Labels) == 0 {
		return
	}
	t := batch.Labels[0]
	count := func(l int64) {
		d.seen++
		if l < 0 || l >= int64(d.headWidth) {
			d.outOfRange++
		}
	}
	switch t.DType() {
	case dtypes.Int32:
		tensors.MustConstFlatData(t, func(flat []int32) {
			for _, l := range flat {
				count(int64(l))
			}
		})
	case dtypes.Int64:
		tensors.MustConstFlatData(t, func(flat []int64) {
			for _, l := range flat {
				count(l)
			}
		})
	}
}

// LoadSplitOrSynthetic loads a split from the folder data.StateOf chooses for root: root when
// it holds real data (verified or not) or synthetic data of its own, else SyntheticDir(root),
// where Prepare puts synthetic data; if neither has it, it returns LoadSplit's error for root
// (which says how to get the data).
func LoadSplitOrSynthetic(root string, spec data.Spec, split data.Split) (*data.Records, error) {
	return data.StateOf(root, spec).LoadSplit(split)
}
