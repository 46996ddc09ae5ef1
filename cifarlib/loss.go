package cifarlib

import (
	"fmt"
	"math"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/train/loss"
)

// GuardMode selects which label guards a loss built by LossBuilder applies.
type GuardMode int

const (
	// GuardAll (the default) applies the static guard at graph build (head width vs the
	// dataset's classes, label dtype/shape, batch sizes) and the in-graph guard: out-of-range
	// labels are excluded from the loss, counted with their positions into the model.Store,
	// and reported on the host by checkDeviceLabels after the step.
	GuardAll GuardMode = iota
	// GuardStatic applies only the static guard at graph build; out-of-range labels are still
	// excluded from the loss but are not recorded.
	GuardStatic
	// GuardOff calls GoMLX's plain loss.SparseCategoricalCrossEntropyLogits with no guard at all.
	// A label >= the head width becomes an all-zero one-hot row: its loss and gradient are
	// exactly 0 and training silently goes on. It exists so notebooks can show that failure.
	GuardOff
)

// String returns "all", "static" or "off".
func (g GuardMode) String() string {
	switch g {
	case GuardStatic:
		return "static"
	case GuardOff:
		return "off"
	}
	return "all"
}

// ParseGuardMode parses "all" (or ""), "static" and "off".
func ParseGuardMode(s string) (GuardMode, error) {
	switch s {
	case "", "all":
		return GuardAll, nil
	case "static":
		return GuardStatic, nil
	case "off", "none":
		return GuardOff, nil
	}
	return GuardAll, fmt.Errorf("cifarlib: unknown guard mode %q: use \"all\", \"static\" or \"off\"", s)
}

// pyTorchIgnoreIndex is PyTorch's default ignore_index for cross-entropy (-100). Pass it to
// LossBuilder.IgnoreIndex to treat labels equal to -100 as "no label".
const pyTorchIgnoreIndex = -100

// LossBuilder configures the guarded sparse cross-entropy; create it with NewLoss or Model.Loss
// and finish with Done.
type LossBuilder struct {
	dataset     string
	numClasses  int
	overridden  bool
	mode        GuardMode
	ignoreIndex int
	useIgnore   bool
	smoothing   float64
	// fedSmoothing, when set, gives the smoothing's two factors as nodes (LabelSmoothingFed).
	fedSmoothing func(g *graph.Graph, dtype dtypes.DType) (keep, spread *graph.Node)
}

// NewLoss starts a loss for a dataset: the static guard requires logits with spec.NumClasses entries.
func NewLoss(spec data.Spec) *LossBuilder {
	return &LossBuilder{dataset: spec.ID(), numClasses: spec.NumClasses}
}

// Loss starts the loss for this model's dataset (its messages mention a head override).
func (m *Model) Loss() *LossBuilder {
	l := NewLoss(m.Spec)
	l.overridden = m.HeadOverridden
	return l
}

// LossFn returns the model's loss (a train.LossFn) with the given guard mode; see LossBuilder.
func (m *Model) LossFn(mode GuardMode) loss.LossFn {
	return m.Loss().Mode(mode).Done()
}

// Mode sets the guard mode (default GuardAll).
func (l *LossBuilder) Mode(mode GuardMode) *LossBuilder {
	l.mode = mode
	return l
}

// IgnoreIndex makes labels equal to index count as "no label", like PyTorch's ignore_index:
// those rows contribute neither loss nor gradient, are left out of the mean's denominator, and
// are not reported as out of range. Use pyTorchIgnoreIndex for PyTorch's -100. The index must
// be outside [0, numClasses), else building the graph fails with an error. Without this option
// every label must be in range.
// If every label of a batch is ignored the loss is 0 (PyTorch returns NaN).
func (l *LossBuilder) IgnoreIndex(index int) *LossBuilder {
	l.ignoreIndex, l.useIgnore = index, true
	return l
}

// LabelSmoothing mixes each target with the uniform distribution over the classes, as
// PyTorch's CrossEntropyLoss(label_smoothing=eps): the target of class k is (1-eps)*onehot_k +
// eps/numClasses, for sparse and for one-hot (or soft) labels alike (airbench94 uses 0.2). 0,
// the default, is plain cross-entropy. It changes only the loss of the counted rows: the guards
// refuse and count out-of-range labels exactly as without it. eps must be in [0, 1), else the
// loss function panics with an error when it builds its graph.
func (l *LossBuilder) LabelSmoothing(eps float64) *LossBuilder {
	l.smoothing = eps
	return l
}

// LabelSmoothingFed is LabelSmoothing with the value fed to the graph at run time instead of
// built into it as a constant, so that one compiled program serves every value: factors
// returns, for the loss's graph and the logits' dtype, scalar nodes holding
// SmoothingFactors(eps, numClasses) as that dtype (e.g. read from non-trainable variables). The
// targets are then keep*targets + spread, the very arithmetic of LabelSmoothing's constants; with
// eps 0 (keep 1, spread 0) they are the targets unchanged. Call LabelSmoothing too, with the
// value of the first run: Done checks its range.
func (l *LossBuilder) LabelSmoothingFed(factors func(g *graph.Graph, dtype dtypes.DType) (keep, spread *graph.Node)) *LossBuilder {
	l.fedSmoothing = factors
	return l
}

// SmoothingFactors are LabelSmoothing(eps)'s factors for a head of numClasses outputs: targets
// become keep*targets + spread, keep = 1-eps and spread = eps/numClasses (computed in float64,
// then converted to the logits' dtype, as the loss's constants are).
func SmoothingFactors(eps float64, numClasses int) (keep, spread float64) {
	return 1 - eps, eps / float64(numClasses)
}

// Done returns the loss function, usable as train.LossFn.
//
// Labels may be sparse class indices of any integer dtype, shaped [batch] or [batch, 1]
// (narrower types such as uint8 are converted to int32 in the graph), or one-hot/probability
// floats shaped [batch, numClasses]. Extra label tensors follow GoMLX's convention: a bool mask
// [batch] and/or float weights [batch]. The result is the mean loss over the counted rows.
//
// With GuardAll or GuardStatic, graph building panics with a typed error (*HeadMismatchError,
// *LabelDTypeError, *LabelShapeError, *BatchSizeMismatchError); GoMLX's executors and the
// trainer return it as an error.
func (l *LossBuilder) Done() loss.LossFn {
	cfg := *l
	if cfg.smoothing < 0 || cfg.smoothing >= 1 || math.IsNaN(cfg.smoothing) {
		err := fmt.Errorf("cifarlib: label smoothing %g is outside [0, 1): use 0 (none) or e.g. 0.1", cfg.smoothing)
		return func(_, _ []*graph.Node) *graph.Node { panic(err) }
	}
	if cfg.mode == GuardOff {
		if cfg.smoothing == 0 && cfg.fedSmoothing == nil {
			return loss.SparseCategoricalCrossEntropyLogits
		}
		return cfg.unguardedSmoothedLoss
	}
	if cfg.useIgnore && cfg.ignoreIndex >= 0 && cfg.ignoreIndex < cfg.numClasses {
		err := fmt.Errorf("cifarlib: ignore index %d is a valid class of %s [0, %d): choose a negative value such as %d",
			cfg.ignoreIndex, cfg.dataset, cfg.numClasses, pyTorchIgnoreIndex)
		return func(_, _ []*graph.Node) *graph.Node { panic(err) }
	}
	return func(labels, predictions []*graph.Node) *graph.Node {
		return cfg.guardedLoss(labels, predictions)
	}
}

// guardedLoss implements Done's loss function.
func (l *LossBuilder) guardedLoss(labels, predictions []*graph.Node) *graph.Node {
	if len(predictions) == 0 || len(labels) == 0 {
		panic(fmt.Errorf("cifarlib: the loss needs logits and labels, got %d predictions and %d labels",
			len(predictions), len(labels)))
	}
	logits, lab := predictions[0], labels[0]
	if err := l.checkStatic(lab.Shape(), logits.Shape()); err != nil {
		panic(err)
	}
	batch := logits.Shape().Dimensions[0]
	weights, mask := loss.CheckExtraLabelsForWeightsAndMask(shapes.Make(logits.DType(), batch), labels[1:])

	if lab.DType().IsFloat() {
		// One-hot (or soft) labels of the head's width: nothing can be out of range.
		perExample := graph.ReduceSum(graph.Neg(graph.Mul(l.smooth(graph.ConvertDType(lab, logits.DType())),
			graph.LogSoftmax(logits))), -1)
		return maskedMean(perExample, mask, weights)
	}

	g := logits.Graph()
	sparse := graph.ConvertDType(graph.Reshape(lab, batch), dtypes.Int32)
	n := graph.Scalar(g, dtypes.Int32, l.numClasses)
	inRange := graph.LogicalAnd(graph.GreaterOrEqual(sparse, graph.ScalarZero(g, dtypes.Int32)),
		graph.LessThan(sparse, n))
	bad := graph.LogicalNot(inRange)
	if l.useIgnore {
		bad = graph.LogicalAnd(bad, graph.NotEqual(sparse, graph.Scalar(g, dtypes.Int32, l.ignoreIndex)))
	}
	if l.mode == GuardAll {
		recordDeviceLabels(g, sparse, bad, l.numClasses)
	}
	safe := graph.Where(inRange, sparse, graph.ZerosLike(sparse))
	oneHot := l.smooth(graph.OneHot(safe, l.numClasses, logits.DType()))
	perExample := graph.ReduceSum(graph.Neg(graph.Mul(oneHot, graph.LogSoftmax(logits))), -1)
	counted := inRange
	if mask != nil {
		counted = graph.LogicalAnd(counted, mask)
	}
	return maskedMean(perExample, counted, weights)
}

// smooth applies LabelSmoothing to targets [batch, numClasses]: (1-eps)*targets + eps/numClasses.
// With LabelSmoothingFed, the two factors are the fed nodes.
func (l *LossBuilder) smooth(targets *graph.Node) *graph.Node {
	if l.fedSmoothing != nil {
		keep, spread := l.fedSmoothing(targets.Graph(), targets.DType())
		return graph.Add(graph.Mul(targets, keep), spread)
	}
	if l.smoothing == 0 {
		return targets
	}
	keep, spread := SmoothingFactors(l.smoothing, targets.Shape().Dimensions[1])
	return graph.AddScalar(graph.MulScalar(targets, keep), spread)
}

// unguardedSmoothedLoss is GuardOff's loss with LabelSmoothing: GoMLX's plain loss with smoothed
// targets. As GoMLX's, it checks nothing: a label outside the head one-hots to a zero row, so
// its target is the uniform eps/numClasses alone, silently.
func (l *LossBuilder) unguardedSmoothedLoss(labels, predictions []*graph.Node) *graph.Node {
	logits := predictions[0]
	targets := labels[0]
	if !targets.DType().IsFloat() {
		batch := logits.Shape().Dimensions[0]
		targets = graph.OneHot(graph.Reshape(targets, batch), logits.Shape().Dimensions[1], logits.DType())
	}
	targets = l.smooth(graph.ConvertDType(targets, logits.DType()))
	return graph.ReduceAllMean(graph.ReduceSum(graph.Neg(graph.Mul(targets, graph.LogSoftmax(logits))), -1))
}

// maskedMean is sum(loss*weights over counted rows) / number of counted rows (0 when none).
func maskedMean(perExample, counted, weights *graph.Node) *graph.Node {
	if weights != nil {
		perExample = graph.Mul(perExample, weights)
	}
	if counted == nil {
		return graph.ReduceAllMean(perExample)
	}
	zeros := graph.ZerosLike(perExample)
	sum := graph.ReduceAllSum(graph.Where(counted, perExample, zeros))
	count := graph.ReduceAllSum(graph.Where(counted, graph.OnesLike(perExample), zeros))
	return graph.Div(sum, graph.MaxScalar(count, 1))
}

// checkStatic is the static guard: head width, label dtype and shape, batch sizes.
func (l *LossBuilder) checkStatic(labels, logits shapes.Shape) error {
	if logits.Rank() != 2 {
		return fmt.Errorf("cifarlib: logits must be [batch, classes], got shape %s", logits)
	}
	width := logits.Dimensions[1]
	if width != l.numClasses {
		return &HeadMismatchError{Dataset: l.dataset, HeadWidth: width, NumClasses: l.numClasses, Overridden: l.overridden}
	}
	return checkLabelTensor(labels, logits.Dimensions[0], width)
}

// checkLabelTensor verifies the label side of the input contract for a batch of batchSize
// examples and a head of headWidth outputs: integer class indices shaped [batch] or [batch, 1],
// or float one-hot labels shaped [batch, headWidth]. It returns *BatchSizeMismatchError,
// *LabelDTypeError or *LabelShapeError.
func checkLabelTensor(labels shapes.Shape, batchSize, headWidth int) error {
	dims := append([]int(nil), labels.Dimensions...)
	if len(dims) == 0 || len(dims) > 2 {
		return &LabelShapeError{Dimensions: dims, HeadWidth: headWidth}
	}
	if dims[0] != batchSize {
		return &BatchSizeMismatchError{Images: batchSize, Labels: dims[0]}
	}
	switch {
	case labels.DType.IsInt():
		if len(dims) == 2 && dims[1] != 1 {
			return &LabelShapeError{Dimensions: dims, HeadWidth: headWidth}
		}
	case labels.DType.IsFloat():
		if len(dims) == 2 && dims[1] != 1 && dims[1] != headWidth {
			return &LabelShapeError{Dimensions: dims, HeadWidth: headWidth, OneHot: true}
		}
		if len(dims) == 1 || dims[1] != headWidth {
			return &LabelDTypeError{DType: strings.ToLower(labels.DType.String()), Dimensions: dims}
		}
	default:
		return &LabelDTypeError{DType: strings.ToLower(labels.DType.String()), Dimensions: dims}
	}
	return nil
}
