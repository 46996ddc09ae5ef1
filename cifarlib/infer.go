package cifarlib

import (
	"errors"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// ErrNoBackend is returned by the one-call helpers (Model.Logits, Model.LossOn, Trained's
// methods) when they are given a nil backend.
var ErrNoBackend = errors.New("cifarlib: no backend: create one with backends.New(\"auto\")")

// Logits runs the model on images (float32 [n, 32, 32, 3]) with the variables of store and
// returns the logits [n, HeadWidth]: PyTorch's `model(x)`. A nil store runs freshly initialised
// weights, as after construction. A bad input (say channels-first images) is returned as the
// model's typed error (*InputShapeError, *InputDTypeError), not panicked.
func (m *Model) Logits(backend compute.Backend, store *model.Store, images *tensors.Tensor) (*tensors.Tensor, error) {
	out, err := runOnce(backend, store, func(scope *model.Scope, images *graph.Node) *graph.Node {
		return m.ModelFn(scope, nil, []*graph.Node{images})[0]
	}, images)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// runOnce builds graphFn into an executor on backend with the variables of store (nil: fresh
// ones) and runs it once on inputs. Graph-building panics come back as errors, cifarlib's own
// typed error when there is one.
func runOnce[F model.ExecGraphFn](backend compute.Backend, store *model.Store, graphFn F, inputs ...any) ([]*tensors.Tensor, error) {
	if backend == nil {
		return nil, ErrNoBackend
	}
	if store == nil {
		store = model.NewStore()
	}
	var out []*tensors.Tensor
	err := backends.TrainCatch(func() error {
		exec, err := model.NewExec(backend, store, graphFn)
		if err != nil {
			return err
		}
		out, err = exec.Exec(inputs...)
		return err
	})
	if err != nil {
		return nil, backends.TranslateRunError(rootError(err), leadingDim(inputs))
	}
	return out, nil
}

// rootError returns cifarlib's own typed error inside err (an input-contract error, or a guard's
// error as guardErrorOf finds it, under GoMLX's wrapping, e.g. "graph construction failed: ..."),
// else err.
func rootError(err error) error {
	var (
		shape *InputShapeError
		dtype *InputDTypeError
		lbl   *LabelDTypeError
		lshp  *LabelShapeError
		bsz   *BatchSizeMismatchError
	)
	switch {
	case errors.As(err, &shape):
		return shape
	case errors.As(err, &dtype):
		return dtype
	case errors.As(err, &lbl):
		return lbl
	case errors.As(err, &lshp):
		return lshp
	case errors.As(err, &bsz):
		return bsz
	}
	return GuardErrorOf(err)
}

// guardErrorOf returns the guard's own error when err (from GoMLX's loop, which wraps hook,
// dataset and graph-building errors in its own messages) carries one, so the message is the
// guard's; other errors are returned unchanged.
func GuardErrorOf(err error) error {
	var head *HeadMismatchError
	var host *data.LabelRangeError
	var device *DeviceLabelError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &head):
		return head
	case errors.As(err, &host):
		return host
	case errors.As(err, &device):
		return device
	}
	return err
}

// leadingDim returns the first axis of the first input when it is a tensor (the batch size of
// Logits and the one-call losses), else 0.
func leadingDim(inputs []any) int {
	if len(inputs) == 0 {
		return 0
	}
	if t, ok := inputs[0].(*tensors.Tensor); ok && t != nil && t.Rank() > 0 {
		return t.Shape().Dimensions[0]
	}
	return 0
}
