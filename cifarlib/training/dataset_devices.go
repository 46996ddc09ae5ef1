package training

import (
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/cifarlab/cifarlab/cifarlib/backends"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/distributed"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/dataset"
	"github.com/gomlx/gomlx/ml/train"
)

// newDistributedDataset spreads each batch of source (a global batch, e.g. of a Dataset) across
// devices devices of backend for data-parallel training or evaluation with GoMLX's train.Loop
// and train.Trainer (DistributedTrainStep / DistributedEval): every global batch of B examples
// is cut on the host into devices consecutive shards of B/devices examples, which GoMLX's
// dataset.NewDistributedAccumulator places on devices 0..devices-1 as one dtensor sharded on
// the batch axis. The trainer then runs one program that XLA partitions (AutoSharding): the
// variables are replicated, the gradients and the batch-norm statistics reduced over the whole
// global batch, so positions in the guards' errors are positions in the global batch, and the
// results equal those of one device at batch B up to float32 rounding.
//
// devices is a count (>= 2) or DevicesAll; the backend must have that many devices (see
// backends.NewWithDevices) and every batch size must be a multiple of it
// (*BatchDivisibilityError otherwise, yielded by the iteration). Errors of source (such as
// the host guard's *LabelRangeError, which names global positions since it checks the batch
// before it is cut) are yielded unchanged.
func newDistributedDataset(backend compute.Backend, source train.Dataset, devices int) (train.DistributedDataset, error) {
	if backend == nil || source == nil {
		return nil, errors.New("training: NewDistributedDataset needs a backend and a source dataset")
	}
	n, err := backends.ResolveDevices(backend, devices)
	if err != nil {
		return nil, err
	}
	if n < 2 {
		return nil, &backends.DeviceCountError{Backend: backends.Name(backend), Requested: devices, Available: backend.NumDevices(),
			Fix: "a distributed dataset needs at least 2 devices; use the dataset itself for one device"}
	}
	mesh, err := backends.NewDeviceMesh(n)
	if err != nil {
		return nil, err
	}
	return newAccumulator(backend, mesh, &shardSplitter{inner: source, devices: n})
}

// newAccumulator returns GoMLX's DistributedAccumulator over split, sharding images and labels
// on the batch axis of mesh, with the AutoSharding strategy.
func newAccumulator(backend compute.Backend, mesh *distributed.DeviceMesh, split *shardSplitter) (train.DistributedDataset, error) {
	spec, err := backends.BatchShardingSpec(mesh)
	if err != nil {
		return nil, err
	}
	specs := []*distributed.ShardingSpec{spec}
	acc, err := dataset.NewDistributedAccumulator(backend, split, distributed.AutoSharding, specs, specs, nil)
	if err != nil {
		return nil, fmt.Errorf("training: creating the distributed dataset over %d devices: %w", split.devices, err)
	}
	return acc, nil
}

// shardSplitter yields, for each batch of inner, devices consecutive shards of it (in batch
// order): the source dataset of a DistributedAccumulator, which puts them back together as
// one global batch sharded across the devices. With headWidth > 0 it also counts, per global
// batch, the labels outside [0, headWidth).
type shardSplitter struct {
	inner     train.Dataset
	devices   int
	headWidth int

	mu  sync.Mutex
	bad []int64 // out-of-range labels per global batch yielded, in order
}

// Name implements train.Dataset.
func (s *shardSplitter) Name() string { return s.inner.Name() }

// Iter implements train.Dataset.
func (s *shardSplitter) Iter() iter.Seq2[train.Batch, error] {
	return func(yield func(train.Batch, error) bool) {
		for batch, err := range s.inner.Iter() {
			if err != nil {
				yield(train.Batch{}, err)
				return
			}
			if s.headWidth > 0 && len(batch.Labels) > 0 {
				s.count(batch.Labels[0])
			}
			shards, err := splitBatch(batch, s.devices)
			_ = batch.Finalize()
			if err != nil {
				yield(train.Batch{}, err)
				return
			}
			for i, shard := range shards {
				if !yield(shard, nil) {
					for _, rest := range shards[i+1:] {
						_ = rest.Finalize()
					}
					return
				}
			}
		}
	}
}

// count records the number of labels of one global batch outside [0, headWidth).
func (s *shardSplitter) count(labels *tensors.Tensor) {
	var bad int64
	if labels.DType() == dtypes.Int32 {
		tensors.MustConstFlatData(labels, func(flat []int32) {
			for _, l := range flat {
				if l < 0 || int(l) >= s.headWidth {
					bad++
				}
			}
		})
	}
	s.mu.Lock()
	s.bad = append(s.bad, bad)
	s.mu.Unlock()
}

// outOfRange returns the out-of-range labels of the first steps global batches yielded
// (the accumulator reads ahead of the training loop, so more may have been drawn).
func (s *shardSplitter) outOfRange(steps int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, b := range s.bad[:min(steps, len(s.bad))] {
		n += b
	}
	return n
}

// splitBatch cuts every input and label of batch (batch on axis 0) into n consecutive shards.
func splitBatch(batch train.Batch, n int) ([]train.Batch, error) {
	shards := make([]train.Batch, n)
	for i := range shards {
		shards[i].Spec = batch.Spec
	}
	cut := func(t *tensors.Tensor, add func(i int, s *tensors.Tensor)) error {
		shape := t.Shape()
		if shape.Rank() == 0 {
			return fmt.Errorf("training: cannot shard a scalar %s across %d devices", shape, n)
		}
		size := shape.Dimensions[0]
		if err := backends.CheckBatchDivisible("Data.BatchSize", size, n); err != nil {
			return err
		}
		shardShape := shape.Clone()
		shardShape.Dimensions[0] = size / n
		var err error
		if cerr := t.ConstBytes(func(src []byte) {
			step := len(src) / n
			for i := range n {
				s := tensors.FromShape(shardShape)
				if merr := s.MutableBytes(func(dst []byte) { copy(dst, src[i*step:(i+1)*step]) }); merr != nil && err == nil {
					err = merr
				}
				add(i, s)
			}
		}); cerr != nil {
			return cerr
		}
		return err
	}
	for _, t := range batch.Inputs {
		if err := cut(t, func(i int, s *tensors.Tensor) { shards[i].Inputs = append(shards[i].Inputs, s) }); err != nil {
			finalizeBatches(shards)
			return nil, err
		}
	}
	for _, t := range batch.Labels {
		if err := cut(t, func(i int, s *tensors.Tensor) { shards[i].Labels = append(shards[i].Labels, s) }); err != nil {
			finalizeBatches(shards)
			return nil, err
		}
	}
	return shards, nil
}

func finalizeBatches(batches []train.Batch) {
	for _, b := range batches {
		_ = b.Finalize()
	}
}
