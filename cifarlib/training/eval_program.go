package training

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute/distributed"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/core/tensors/dtensor"
	"github.com/gomlx/gomlx/ml/model"
)

// Test-time augmentation levels (EvalOptions.TTA), after airbench (airbench 0.1.8, utils.py:
// infer with tta_level 0, 1 and 2: infer_basic, infer_mirror, infer_mirror_translate). Each
// averages the model's logits (not its probabilities) over views of every image.
const (
	// TTANone evaluates each image as it is: f(x).
	TTANone = 0
	// TTAMirror averages the image and its left-right mirror: 0.5*f(x) + 0.5*f(mirror(x)).
	TTAMirror = 1
	// TTAMirrorTranslate adds two translations to TTAMirror: with t1 and t2 the image shifted
	// by one pixel up-left and down-right (the 32x32 crops at (0, 0) and (2, 2) of the image
	// padded by 1 pixel with reflect padding, PyTorch's F.pad mode 'reflect'),
	// 0.5*m(x) + 0.5*(m(t1) + m(t2))/2, where m(v) = 0.5*f(v) + 0.5*f(mirror(v)): six views.
	TTAMirrorTranslate = 2
)

// checkTTA checks an EvalOptions.TTA level.
func checkTTA(level int) error {
	if level < TTANone || level > TTAMirrorTranslate {
		return fmt.Errorf("training: EvalOptions.TTA %d is not a test-time augmentation level: use TTANone (0), TTAMirror (1) or TTAMirrorTranslate (2)", level)
	}
	return nil
}

// ttaName names a TTA level for reports: "none", "mirror", "mirror+translate".
func ttaName(level int) string {
	switch level {
	case TTANone:
		return "none"
	case TTAMirror:
		return "mirror"
	case TTAMirrorTranslate:
		return "mirror+translate"
	}
	return fmt.Sprintf("level %d", level)
}

// ttaWeights returns the weight of each view's logits that TTA level tta averages, one per view:
// for TTAMirrorTranslate x, mirror(x), t1, mirror(t1), t2, mirror(t2), weighted 1/4, 1/4, 1/8,
// 1/8, 1/8, 1/8 (airbench's nesting of means, expanded).
func ttaWeights(tta int) []float32 {
	switch tta {
	case TTANone:
		return []float32{1}
	case TTAMirror:
		return []float32{0.5, 0.5}
	}
	return []float32{0.25, 0.25, 0.125, 0.125, 0.125, 0.125}
}

// ttaViewCount is the number of views TTA level tta averages: 1, 2 or 6.
func ttaViewCount(tta int) int { return len(ttaWeights(tta)) }

// ttaViews returns the views of images [B, 32, 32, 3] that TTA level tta averages, in the order
// of ttaWeights, and their weights.
func ttaViews(images *graph.Node, tta int) (views []*graph.Node, weights []float32) {
	const widthAxis = 2
	mirror := func(x *graph.Node) *graph.Node { return graph.Reverse(x, widthAxis) }
	switch tta {
	case TTANone:
		return []*graph.Node{images}, ttaWeights(tta)
	case TTAMirror:
		return []*graph.Node{images, mirror(images)}, ttaWeights(tta)
	}
	up, down := reflectShift(images, -1), reflectShift(images, 1)
	return []*graph.Node{images, mirror(images), up, mirror(up), down, mirror(down)}, ttaWeights(tta)
}

// reflectShift translates images [B, H, W, C] by d (-1 or 1) pixels on both the height and
// width axes: output pixel (y, x) is input pixel (y+d, x+d), with reflect padding at the edge
// (the pixel at -1 is the one at 1, the one at H the one at H-2).
func reflectShift(images *graph.Node, d int) *graph.Node {
	x := images
	for _, axis := range []int{1, 2} {
		n := x.Shape().Dimensions[axis]
		if d < 0 {
			x = graph.Concatenate([]*graph.Node{graph.SliceAxis(x, axis, graph.AxisRange(1, 2)), graph.SliceAxis(x, axis, graph.AxisRange(0, n-1))}, axis)
		} else {
			x = graph.Concatenate([]*graph.Node{graph.SliceAxis(x, axis, graph.AxisRange(1, n)), graph.SliceAxis(x, axis, graph.AxisRange(n-2, n-1))}, axis)
		}
	}
	return x
}

// ttaLogits returns m's logits [B, classes] of images [B, 32, 32, 3], averaged over the views
// of TTA level tta. The views of each image are stacked behind it into one batch of B*views
// images, so the model runs once per batch (its variables, and its batch norm, which
// evaluation runs on the moving averages, are the same for every view) and, on several
// devices, each device computes the views of its own examples.
func ttaLogits(m *cifarlib.Model, scope *model.Scope, images *graph.Node, tta int) *graph.Node {
	views, weights := ttaViews(images, tta)
	if len(views) == 1 {
		return m.ModelFn(scope, nil, views)[0]
	}
	b, k := images.Shape().Dimensions[0], len(views)
	stacked := graph.Reshape(graph.Stack(views, 1), b*k, data.ImageHeight, data.ImageWidth, data.ImageChannels)
	logits := m.ModelFn(scope, nil, []*graph.Node{stacked})[0]
	classes := logits.Shape().Dimensions[logits.Rank()-1]
	logits = graph.Reshape(logits, b, k, classes)
	w := graph.Reshape(graph.Const(images.Graph(), weights), 1, k, 1)
	return graph.ReduceSum(graph.Mul(logits, graph.ConvertDType(w, logits.DType())), 1)
}

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
