package cifarlib

import (
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/loss"
)

// LossOptions configures Model.LossOn. The zero value runs the guarded loss (GuardAll) on
// freshly initialised weights.
type LossOptions struct {
	// Guard is the loss: GuardAll (default), GuardStatic, or GuardOff for GoMLX's plain loss.
	Guard GuardMode
	// Store holds the weights; nil uses freshly initialised ones.
	Store *model.Store
	// Logged marks the labels, the logits, the one-hot labels and the loss with SetLogged, so
	// GoMLX prints their values after the step: a `print` inside the computation.
	Logged bool
	// MapLabels, when set, transforms the labels inside the graph before the loss (labels
	// computed on the device, where no host check sees them).
	MapLabels func(labels *graph.Node) *graph.Node
}

// LossOn builds the model and its loss for one batch (images [n, 32, 32, 3] float32, labels
// [n, 1] int32), runs it once on backend and returns the loss. What the guards refuse when the
// graph is built (a head that does not fit the dataset, a bad shape or dtype) is returned as
// their typed error, with nothing run. With GuardAll the in-graph guard's report is read after
// the step: labels out of range on the device come back as a *DeviceLabelError, with the loss.
func (m *Model) LossOn(backend compute.Backend, images, labels *tensors.Tensor, opts LossOptions) (float32, error) {
	store := opts.Store
	if store == nil {
		store = model.NewStore() // CheckDeviceLabels reads the guard's report from it
	}
	lossFn := m.LossFn(opts.Guard)
	out, err := runOnce(backend, store, func(scope *model.Scope, images, labels *graph.Node) *graph.Node {
		logits := m.ModelFn(scope, nil, []*graph.Node{images})[0]
		if opts.MapLabels != nil {
			labels = opts.MapLabels(labels)
		}
		if opts.Logged {
			labels.SetLogged("#full labels")
			logits.SetLogged("logits")
			oneHot := graph.OneHot(graph.Reshape(labels, -1), m.NumClasses, logits.DType())
			oneHot.SetLogged(fmt.Sprintf("#full one-hot labels, %d wide", m.NumClasses))
		}
		l := lossFn([]*graph.Node{labels}, []*graph.Node{logits})
		if opts.Logged {
			l.SetLogged("GoMLX loss")
		}
		return l
	}, images, labels)
	if err != nil {
		return 0, err
	}
	value := tensors.ToScalar[float32](out[0])
	if opts.Guard == GuardAll {
		return value, checkDeviceLabels(store, 0)
	}
	return value, nil
}

// ExampleLosses is the loss of every example of one batch, as Model.Losses computes it.
type ExampleLosses struct {
	// Spec is the dataset and HeadWidth the model's number of logits.
	Spec      data.Spec
	HeadWidth int
	// Labels are the batch's labels.
	Labels []int32
	// Plain is each example's loss under GoMLX's loss.SparseCategoricalCrossEntropyLogits
	// before averaging: the one-hot label times the negated log-softmax of the logits, summed.
	// A label >= HeadWidth one-hots into an all-zero row, so its loss is exactly 0.
	Plain []float32
	// PlainMean is GoMLX's loss of the batch (the mean of Plain): what training minimises.
	PlainMean float32
	// Guarded is the guarded loss of the batch (GuardStatic) when GuardErr is nil.
	Guarded float32
	// GuardErr is why the guarded loss refused the batch (e.g. *HeadMismatchError), or nil.
	GuardErr error
}

// Beyond counts the examples whose label is >= HeadWidth, and how many of them have a loss of
// exactly 0.
func (e *ExampleLosses) Beyond() (beyond, zero int) {
	for i, l := range e.Labels {
		if int(l) >= e.HeadWidth {
			beyond++
			if e.Plain[i] == 0 {
				zero++
			}
		}
	}
	return beyond, zero
}

// exampleRows is how many examples String lists.
const exampleRows = 12

// String lists the first examples with label, class and plain loss, then the counts: how many
// labels are beyond the head and how many of those have a loss of exactly 0, the mean loss of
// the others, GoMLX's batch loss, and what the guarded loss says.
func (e *ExampleLosses) String() string {
	var b strings.Builder
	b.WriteString("example  label  class            loss\n")
	for i := range min(exampleRows, len(e.Labels)) {
		fmt.Fprintf(&b, "%7d  %5d  %-15s  %.4f\n", i, e.Labels[i], e.Spec.ClassName(int(e.Labels[i])), e.Plain[i])
	}
	if len(e.Labels) > exampleRows {
		b.WriteString("    ...\n")
	}
	beyond, zero := e.Beyond()
	var inside int
	var insideSum, sum float64
	for i, l := range e.Labels {
		sum += float64(e.Plain[i])
		if int(l) < e.HeadWidth {
			inside++
			insideSum += float64(e.Plain[i])
		}
	}
	fmt.Fprintf(&b, "\nlabels >= %d: %d of %d examples; their loss is exactly 0 for %d of them\n", e.HeadWidth, beyond, len(e.Labels), zero)
	if inside > 0 {
		fmt.Fprintf(&b, "labels <  %d: %d examples, mean loss %.4f\n", e.HeadWidth, inside, insideSum/float64(inside))
	}
	fmt.Fprintf(&b, "mean over the batch: %.4f; GoMLX's loss for this batch: %.4f (what training minimises)\n",
		sum/float64(max(1, len(e.Labels))), e.PlainMean)
	if e.GuardErr != nil {
		fmt.Fprintf(&b, "guarded loss: refuses the batch: %v\n", e.GuardErr)
	} else {
		fmt.Fprintf(&b, "guarded loss: %.4f\n", e.Guarded)
	}
	return b.String()
}

// Losses computes the loss of every example of b under GoMLX's plain loss with the variables
// of store (nil: fresh weights), GoMLX's loss of the batch, and the guarded loss of the same
// batch, or the error with which the guarded loss refuses it (see ExampleLosses).
func (m *Model) Losses(backend compute.Backend, store *model.Store, b *data.Batch) (*ExampleLosses, error) {
	if store == nil {
		store = model.NewStore() // the guarded loss below runs on the same weights
	}
	out, err := runOnce(backend, store, func(scope *model.Scope, images, labels *graph.Node) (*graph.Node, *graph.Node) {
		logits := m.ModelFn(scope, nil, []*graph.Node{images})[0]
		oneHot := graph.OneHot(graph.Reshape(labels, -1), m.NumClasses, logits.DType())
		perExample := graph.ReduceSum(graph.Mul(oneHot, graph.Neg(graph.LogSoftmax(logits))), -1)
		return perExample, loss.SparseCategoricalCrossEntropyLogits([]*graph.Node{labels}, []*graph.Node{logits})
	}, b.Images, b.Labels)
	if err != nil {
		return nil, err
	}
	e := &ExampleLosses{Spec: m.Spec, HeadWidth: m.NumClasses, Labels: append([]int32(nil), b.Host.Labels...),
		Plain: tensors.MustCopyFlatData[float32](out[0]), PlainMean: tensors.ToScalar[float32](out[1])}
	e.Guarded, e.GuardErr = m.LossOn(backend, b.Images, b.Labels, LossOptions{Guard: GuardStatic, Store: store})
	return e, nil
}
