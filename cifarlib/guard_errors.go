package cifarlib

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// Sentinel errors, one per family of guard failure. Every typed error below matches its
// sentinel with errors.Is, so callers can test the kind without knowing the concrete type:
//
//	if errors.Is(err, data.ErrLabelOutOfRange) { ... }
//
// Use errors.As with the concrete type (*HeadMismatchError, *LabelRangeError, ...) to read the numbers.
var (
	// ErrHeadMismatch: the classifier head width differs from the dataset's number of classes.
	ErrHeadMismatch = errors.New("cifarlib: classifier head does not match the dataset")
	// ErrInputContract: images or labels break the model's input contract (shape, layout, dtype, batch).
	ErrInputContract = errors.New("cifarlib: input contract violated")
)

// HeadMismatchError is returned by the static guard, when the graph is built: the model's
// logits have HeadWidth entries but the dataset has NumClasses classes. Nothing has been
// computed yet when it is raised.
type HeadMismatchError struct {
	// Dataset is the dataset id, e.g. "cifar100" or "cifar100-coarse".
	Dataset string
	// HeadWidth is the last dimension of the logits.
	HeadWidth int
	// NumClasses is the number of classes of the dataset.
	NumClasses int
	// Overridden is true when the head width was forced with ModelBuilder.Head.
	Overridden bool
}

func (e *HeadMismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "model head has %d outputs but dataset %s has %d classes", e.HeadWidth, e.Dataset, e.NumClasses)
	if e.Overridden {
		fmt.Fprintf(&b, " (head overridden to %d)", e.HeadWidth)
	}
	fmt.Fprintf(&b, ": build the model with cifarlib's factory for %s, or set the head to %d", e.Dataset, e.NumClasses)
	return b.String()
}

// Is makes errors.Is(err, ErrHeadMismatch) true.
func (e *HeadMismatchError) Is(target error) bool { return target == ErrHeadMismatch }

// DeviceLabelError is the in-graph guard's report, read on the host after a step: labels that
// reached the loss on the device (for instance computed there) were outside [0, NumClasses).
// It is the analogue of CUDA's "device-side assert", with the positions.
// The step's loss excluded those rows, so they did not move the weights.
type DeviceLabelError struct {
	// Step is the training step (Loop.LoopStep) after which the check ran, or -1 when unknown.
	Step int
	// NumBad is the number of out-of-range labels seen since the previous check.
	NumBad int
	// Batches is the number of batches with out-of-range labels since the previous check
	// (1 when checked after every step).
	Batches int
	// BatchSize is the number of labels in the latest batch with out-of-range labels.
	BatchSize int
	// NumClasses is the head width the labels were checked against.
	NumClasses int
	// Bad lists the first (up to deviceGuardSlots) offending labels of the latest such batch;
	// Example is always -1.
	Bad []data.BadLabel
}

func (e *DeviceLabelError) Error() string {
	where := "in-graph label guard"
	if e.Step >= 0 {
		where = fmt.Sprintf("in-graph label guard after step %d", e.Step)
	}
	const fix = "the labels fed to the loss must be class indices in [0, %d); check the graph code that computes " +
		"them and that the model head matches the dataset"
	if e.Batches > 1 {
		shown := min(len(e.Bad), e.NumBad)
		return fmt.Sprintf("%s: %d labels that reached the loss on the device in %d batches are out of range [0, %d); "+
			"in the latest (%d labels): %s: "+fix, where, e.NumBad, e.Batches, e.NumClasses, e.BatchSize,
			data.ListBadLabels(e.Bad, shown), e.NumClasses)
	}
	return fmt.Sprintf("%s: %d of %d labels that reached the loss on the device are out of range [0, %d): %s: "+fix,
		where, e.NumBad, e.BatchSize, e.NumClasses, data.ListBadLabels(e.Bad, e.NumBad), e.NumClasses)
}

// Is makes errors.Is(err, ErrLabelOutOfRange) true.
func (e *DeviceLabelError) Is(target error) bool { return target == data.ErrLabelOutOfRange }

// InputShapeError reports images that are not [batch, 32, 32, 3]. A channels-first
// [batch, 3, 32, 32] input (PyTorch's layout) is recognised and named as such.
type InputShapeError struct {
	// Dimensions are the dimensions received.
	Dimensions []int
	// ChannelsFirst is true when the dimensions look like [batch, 3, 32, 32].
	ChannelsFirst bool
}

func (e *InputShapeError) Error() string {
	want := fmt.Sprintf("[batch, %d, %d, %d]", data.ImageHeight, data.ImageWidth, data.ImageChannels)
	switch {
	case e.ChannelsFirst:
		return fmt.Sprintf("images have shape %v, which is channels-first [batch, 3, 32, 32] (PyTorch's NCHW): "+
			"cifarlib models take channels-last %s: transpose the axes (0, 2, 3, 1), e.g. "+
			"graph.TransposeAllAxes(x, 0, 2, 3, 1), or use cifarlib's Dataset", e.Dimensions, want)
	case len(e.Dimensions) != 4:
		return fmt.Sprintf("images have rank %d (shape %v) but a 4D tensor %s is expected: "+
			"a single image needs a batch axis (graph.InsertAxes(x, 0)); flat rows of %d values need a "+
			"reshape to [batch, 32, 32, 3]", len(e.Dimensions), e.Dimensions, want, data.ImageBytes)
	}
	return fmt.Sprintf("images have shape %v but %s is expected: CIFAR images are 32x32 RGB, stored "+
		"channels-last", e.Dimensions, want)
}

// Is makes errors.Is(err, ErrInputContract) true.
func (e *InputShapeError) Is(target error) bool { return target == ErrInputContract }

// InputDTypeError reports images that are not floating point.
type InputDTypeError struct {
	// DType is the dtype received, e.g. "Uint8".
	DType string
}

func (e *InputDTypeError) Error() string {
	return fmt.Sprintf("images have dtype %s but the model takes float32 images: convert the pixels to "+
		"float32 (scaled to [0, 1] and normalised, as cifarlib's Dataset does)", e.DType)
}

// Is makes errors.Is(err, ErrInputContract) true.
func (e *InputDTypeError) Is(target error) bool { return target == ErrInputContract }

// LabelDTypeError reports labels that are not integers (PyTorch: "expected scalar type Long but
// found Float"). Float class indices are refused rather than truncated; one-hot labels are
// accepted only as floats of shape [batch, NumClasses] (see LabelShapeError).
type LabelDTypeError struct {
	// DType is the dtype received.
	DType string
	// Dimensions are the label tensor's dimensions.
	Dimensions []int
}

func (e *LabelDTypeError) Error() string {
	return fmt.Sprintf("labels have dtype %s (shape %v) but class indices must be integers: convert them to "+
		"int32 class indices (narrower integer types such as uint8 are converted automatically), or pass "+
		"one-hot float labels shaped [batch, numClasses]", e.DType, e.Dimensions)
}

// Is makes errors.Is(err, ErrInputContract) true.
func (e *LabelDTypeError) Is(target error) bool { return target == ErrInputContract }

// LabelShapeError reports a label tensor whose shape fits neither sparse labels ([batch] or
// [batch, 1]) nor one-hot labels matching the head ([batch, HeadWidth]); e.g. a [batch, 100]
// one-hot tensor fed to a 10-class head.
type LabelShapeError struct {
	// Dimensions are the label tensor's dimensions.
	Dimensions []int
	// HeadWidth is the model's number of outputs.
	HeadWidth int
	// OneHot is true when the labels are floats (so they were read as one-hot).
	OneHot bool
}

func (e *LabelShapeError) Error() string {
	if e.OneHot {
		return fmt.Sprintf("one-hot labels have shape %v but the model head has %d outputs: one-hot labels must be "+
			"[batch, %d]; the labels come from a dataset with %d classes: build the model for that dataset",
			e.Dimensions, e.HeadWidth, e.HeadWidth, e.Dimensions[len(e.Dimensions)-1])
	}
	return fmt.Sprintf("labels have shape %v: sparse labels must be [batch] or [batch, 1] integer class indices "+
		"(or one-hot floats [batch, %d])", e.Dimensions, e.HeadWidth)
}

// Is makes errors.Is(err, ErrInputContract) true.
func (e *LabelShapeError) Is(target error) bool { return target == ErrInputContract }

// BatchSizeMismatchError reports images and labels whose batch dimensions disagree.
type BatchSizeMismatchError struct {
	// Images and Labels are the two batch sizes.
	Images, Labels int
}

func (e *BatchSizeMismatchError) Error() string {
	return fmt.Sprintf("batch has %d images but %d labels: images and labels must have the same batch size; "+
		"build both from the same example indices (cifarlib's Dataset does)", e.Images, e.Labels)
}

// Is makes errors.Is(err, ErrInputContract) true.
func (e *BatchSizeMismatchError) Is(target error) bool { return target == ErrInputContract }
