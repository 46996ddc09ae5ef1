package cifarlib

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib/backends"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/distributed"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/core/tensors/dtensor"
	"github.com/gomlx/gomlx/ml/model"
)

// LossOnDevices is Model.LossOn with the batch sharded across devices devices of backend, as
// data-parallel training shards it (training.Settings.Compute.Devices): images and labels are cut into
// devices consecutive shards on the batch axis, the weights replicated, and one program is
// partitioned by XLA. The guards see the whole batch: the in-graph guard (GuardAll) counts the
// out-of-range labels of every shard and reports their positions in the global batch
// (*DeviceLabelError); ShardOf says which device held a position. The batch size must be a
// multiple of devices (*BatchDivisibilityError), and backend must have that many devices
// (backends.NewWithDevices). In a notebook, a label made out of range on the device on the last
// device's shard:
//
//	cpu4, _ := backends.NewWithDevices("cpu", 4)
//	b, _ := test.Batch(0, 16)
//	_, err := m.LossOnDevices(cpu4, 4, b.Images, b.Labels,
//		LossOptions{MapLabels: ReplaceLabelOnDevice(13, 57)})
//	// err: in-graph label guard after step 0: 1 of 16 labels that reached the loss on the device
//	// are out of range [0, 10): position 13 label 57: ...
//	device, local := ShardOf(13, 16, 4) // 3, 1: the last device, its second example
func (m *Model) LossOnDevices(backend compute.Backend, devices int, images, labels *tensors.Tensor, opts LossOptions) (float32, error) {
	if backend == nil {
		return 0, ErrNoBackend
	}
	if images == nil || labels == nil {
		return 0, fmt.Errorf("cifarlib: LossOnDevices needs images and labels")
	}
	n, err := backends.ResolveDevices(backend, devices)
	if err != nil {
		return 0, err
	}
	if n < 2 {
		return m.LossOn(backend, images, labels, opts)
	}
	if err := backends.CheckBatchDivisible("batch", images.Shape().Dimensions[0], n); err != nil {
		return 0, err
	}
	store := opts.Store
	if store == nil {
		store = model.NewStore()
		if err := store.SetRNGStateFromSeed(0); err != nil {
			return 0, err
		}
	}
	var mesh *distributed.DeviceMesh
	if mesh, err = backends.StoreMesh(store, n); err != nil {
		return 0, err
	}
	if err := backends.ReplicateUnsharded(store, mesh); err != nil {
		return 0, err
	}
	var value float32
	if err := backends.TrainCatch(func() (err error) {
		value, err = m.shardedLoss(backend, store, mesh, images, labels, opts)
		return err
	}); err != nil {
		return 0, rootError(err)
	}
	if opts.Guard == GuardAll {
		return value, checkDeviceLabels(store, 0)
	}
	return value, nil
}

// shardedLoss runs m's loss of images and labels once, each batch sharded across mesh's
// devices and the variables of store replicated: one program that XLA partitions.
func (m *Model) shardedLoss(backend compute.Backend, store *model.Store, mesh *distributed.DeviceMesh, images, labels *tensors.Tensor,
	opts LossOptions) (float32, error) {
	batchSpec, err := backends.BatchShardingSpec(mesh)
	if err != nil {
		return 0, err
	}
	replicated := distributed.NewReplicatedShardingSpec(mesh)
	lossFn := m.LossFn(opts.Guard)
	exec, err := model.NewExec(backend, store, func(scope *model.Scope, images, labels *graph.Node) *graph.Node {
		logits := m.ModelFn(scope, nil, []*graph.Node{images})[0]
		if opts.MapLabels != nil {
			labels = opts.MapLabels(labels)
		}
		return lossFn([]*graph.Node{labels}, []*graph.Node{logits})
	})
	if err != nil {
		return 0, err
	}
	exec = exec.AutoSharding(mesh).WithInputShardingSpecs(batchSpec, batchSpec).WithOutputShardingSpecs(replicated)
	if err := exec.SetDefaultShardingSpec(replicated); err != nil {
		return 0, err
	}
	defer exec.Finalize()
	var args []any
	for _, t := range []*tensors.Tensor{images, labels} {
		dt, err := dtensor.ShardTensor(batchSpec, t)
		if err != nil {
			return 0, err
		}
		defer func() { _ = dt.FinalizeAll() }()
		args = append(args, dt)
	}
	out, err := exec.DistributedExec(args...)
	if err != nil {
		return 0, err
	}
	loss, err := out[0].Merge()
	if err != nil {
		return 0, err
	}
	return tensors.ToScalar[float32](loss), out[0].FinalizeAll()
}

// ShardOf returns which device holds position of a global batch of batchSize examples sharded
// across devices devices (consecutive shards of batchSize/devices, in device order), and the
// position within that device's shard.
func ShardOf(position, batchSize, devices int) (device, local int) {
	if devices <= 1 || batchSize < devices {
		return 0, position
	}
	per := batchSize / devices
	return position / per, position % per
}

// ReplaceLabelOnDevice returns a LossOptions.MapLabels function that sets the label at position
// of the batch to label inside the graph, that is on the device, after every host-side check:
// the kind of label the in-graph guard exists for (say a label computed by graph code). With
// LossOnDevices it lands on the shard of device ShardOf(position, batch, devices).
func ReplaceLabelOnDevice(position, label int) func(labels *graph.Node) *graph.Node {
	return func(labels *graph.Node) *graph.Node {
		g := labels.Graph()
		pos := graph.Iota(g, labels.Shape(), 0)
		at := graph.Equal(pos, graph.Scalar(g, labels.DType(), position))
		return graph.Where(at, graph.BroadcastToShape(graph.Scalar(g, labels.DType(), label), labels.Shape()), labels)
	}
}
