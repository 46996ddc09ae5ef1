package training

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/distributed"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/dataset"
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

// trainRecords is the data part of a Trainer: the training split, the test split when the run
// evaluates, and where they came from.
type trainRecords struct {
	// dataset is the run's Spec; state what its Data.Dir holds (data.StateOf, looked at once,
	// only when a split is loaded from it).
	dataset     data.Spec
	state       data.State
	log         runLog
	train, test *data.Records
	provenance  data.Provenance // of train and test
}

// loadTrainRecords loads the splits of plan p, timed on the timeline rt: the Env's, else from
// Data.Dir (or the synthetic data Prepare put next to it). The test split is loaded when the
// run evaluates (at the end, or while it trains: Eval.Every not EvalOff).
func loadTrainRecords(p *plan, env Env, log runLog, rt *runTimeline) (*trainRecords, error) {
	r := &trainRecords{dataset: p.Data.Spec, log: log}
	evaluates := !p.Eval.SkipFinal || p.Eval.Every > 0
	if env.Train == nil || evaluates && env.Test == nil {
		rt.event(Event{Kind: EventData})
	}
	began := time.Now()
	if env.Train == nil || evaluates && env.Test == nil {
		r.state = data.StateOf(p.Data.Dir, p.Data.Spec) // once, for both splits and the provenance
	}
	var err error
	if r.train, err = r.load(env.Train, data.SplitTrain); err != nil {
		return nil, err
	}
	if evaluates {
		if r.test, err = r.load(env.Test, data.SplitTest); err != nil {
			return nil, err
		}
	}
	test := r.test
	if test == nil {
		test = env.Test // given, though this run does not evaluate
	}
	r.provenance = r.state.Provenance(r.train, test) // loaded from r.state
	if env.Train != nil {
		r.provenance = data.ProvenanceOf(r.train, test) // given: from their own folder
	}
	if env.Train == nil {
		log("data: %s", r.provenance) // synthetic or real, where from
	}
	rt.add(runs.PhaseData, began)
	return r, nil
}

// load returns given when set (checking its Spec), else loads the split from what tr.state
// found: the DataDir, or SyntheticDir(DataDir) where Prepare puts synthetic data when the
// folder holds no real data (the data's SYNTHETIC DATA line goes to the log).
func (tr *trainRecords) load(given *data.Records, split data.Split) (*data.Records, error) {
	if spec := tr.dataset; given != nil {
		if given.Spec.ID() != spec.ID() || given.Spec.NumClasses != spec.NumClasses {
			return nil, &ConfigError{Field: "Env.Train/Env.Test", Value: given.Spec.ID(),
				Reason: fmt.Sprintf("the records are %s but Data.Spec is %s: load them with the same Spec", given.Spec, spec)}
		}
		return given, nil
	}
	recs, err := tr.state.LoadSplit(split)
	st := tr.state
	if err == nil && split == data.SplitTrain && st.Kind == data.KindSynthetic && st.LoadRoot == data.SyntheticDir(st.Root) {
		tr.log("%s", st) // "SYNTHETIC DATA: ...", as a notebook's first cell says it (one note per run)
	}
	return recs, err
}

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
