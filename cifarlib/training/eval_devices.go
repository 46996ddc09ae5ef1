package training

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib/backends"

	"github.com/gomlx/compute/distributed"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/core/tensors/dtensor"
	"github.com/gomlx/gomlx/ml/model"
)

// useDevices makes the evaluator shard its batches across devices devices of its backend
// (DevicesAll: all of them; 0 or 1: one device). The evaluation graph is then one program
// partitioned by XLA (GoMLX's AutoSharding): images and labels are split on the batch axis,
// the variables replicated, and the per-example outputs gathered back in batch order. Batches
// are padded to the batch size rounded up to a multiple of the device count (see call).
// Changing the count recompiles.
func (e *evalProgram) useDevices(devices int) error {
	n, err := backends.ResolveDevices(e.backend, devices)
	if err != nil {
		return err
	}
	if n <= 1 {
		n = 0
	}
	if n == e.devices {
		return nil
	}
	var mesh *distributed.DeviceMesh
	if n > 0 {
		if mesh, err = backends.StoreMesh(e.store, n); err != nil {
			return err
		}
		if err := backends.ReplicateUnsharded(e.store, mesh); err != nil {
			return err
		}
	}
	for _, exec := range e.execs {
		exec.Finalize()
	}
	e.execs, e.devices, e.mesh = nil, n, mesh
	return nil
}

// execFor returns the evaluation program of TTA level tta on the evaluator's devices, creating
// it on first use.
func (e *evalProgram) execFor(tta int) (*model.Exec, error) {
	if exec := e.execs[tta]; exec != nil {
		return exec, nil
	}
	exec, err := model.NewExec(e.backend, e.store, func(scope *model.Scope, images, labels *graph.Node) (pred, topHit, loss *graph.Node) {
		return e.graph(scope, images, labels, tta)
	})
	if err != nil {
		return nil, fmt.Errorf("training: creating the evaluation graph: %w", err)
	}
	if e.mesh != nil {
		spec, err := backends.BatchShardingSpec(e.mesh)
		if err != nil {
			return nil, err
		}
		exec = exec.AutoSharding(e.mesh).WithInputShardingSpecs(spec, spec).WithOutputShardingSpecs(spec, spec, spec)
		if err := exec.SetDefaultShardingSpec(distributed.NewReplicatedShardingSpec(e.mesh)); err != nil {
			return nil, err
		}
	}
	if e.execs == nil {
		e.execs = map[int]*model.Exec{}
	}
	e.execs[tta] = exec
	return exec, nil
}

// call runs the evaluation graph on one batch: directly on one device, or sharded across
// e.devices devices (see useDevices). It returns pred, topHit and loss, one value per example
// (padded examples at the end, if any, are to be ignored).
//
// Every batch is padded with zero images to opts.BatchSize (rounded up to a multiple of the
// devices), so that a split's last, partial batch runs the same program as the others: one
// program per batch size, shared by the validations and the final evaluation, never compiled
// twice. The padded examples' outputs are dropped, and change nothing else: evaluation uses
// the batch-norm moving averages, not the batch's statistics. On one
// device the program is compiled before the call, so that the timeline times the compile alone.
func (e *evalProgram) call(images, labels *tensors.Tensor, opts EvalOptions) ([]*tensors.Tensor, error) {
	b := images.Shape().Dimensions[0]
	devices := max(e.devices, 1)
	if padded := (max(b, opts.BatchSize) + devices - 1) / devices * devices; padded != b {
		var err error
		if images, err = padBatch(images, padded); err != nil {
			return nil, err
		}
		defer func() { _ = images.FinalizeAll() }()
		if labels, err = padBatch(labels, padded); err != nil {
			return nil, err
		}
		defer func() { _ = labels.FinalizeAll() }()
	}
	exec, err := e.execFor(opts.TTA)
	if err != nil {
		return nil, err
	}
	if e.devices <= 1 {
		if err := e.cur.compile(string(opts.purpose), func() error {
			_, err := exec.Compile(images.Shape(), labels.Shape())
			return err
		}); err != nil {
			return nil, err
		}
		return exec.Call(images, labels)
	}
	defer e.cur.built(string(opts.purpose)) // a sharded program compiles in its first call
	spec := exec.DefaultShardingSpec()
	batchSpec, err := backends.BatchShardingSpec(spec.Mesh)
	if err != nil {
		return nil, err
	}
	var args []any
	for _, t := range []*tensors.Tensor{images, labels} {
		dt, err := dtensor.ShardTensor(batchSpec, t)
		if err != nil {
			return nil, err
		}
		defer func() { _ = dt.FinalizeAll() }()
		args = append(args, dt)
	}
	outs, err := exec.DistributedExec(args...)
	if err != nil {
		return nil, err
	}
	merged := make([]*tensors.Tensor, len(outs))
	for i, o := range outs {
		if merged[i], err = o.Merge(); err != nil {
			return nil, err
		}
		_ = o.FinalizeAll()
	}
	return merged, nil
}

// padBatch returns a copy of t (batch on axis 0) with zero examples appended up to size.
func padBatch(t *tensors.Tensor, size int) (*tensors.Tensor, error) {
	shape := t.Shape().Clone()
	shape.Dimensions[0] = size
	out := tensors.FromShape(shape)
	var err error
	if cerr := t.ConstBytes(func(src []byte) {
		err = out.MutableBytes(func(dst []byte) { copy(dst, src) })
	}); cerr != nil {
		err = cerr
	}
	if err != nil {
		_ = out.FinalizeAll()
		return nil, fmt.Errorf("training: padding an evaluation batch to %d examples: %w", size, err)
	}
	return out, nil
}
