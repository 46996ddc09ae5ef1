package cifarlib

import (
	"fmt"
	"strings"

	"github.com/gomlx/gomlx/ml/train"
)

// CheckBatch verifies a train.Batch against the model's input contract on the host, before it
// is sent to the device: one input of float32 images [batch, 32, 32, 3], labels of the same
// batch size that are integer class indices ([batch] or [batch, 1]) or one-hot floats of the
// head's width. It returns the same typed errors the graph-build guards raise
// (*InputShapeError, *InputDTypeError, *BatchSizeMismatchError, *LabelDTypeError,
// *LabelShapeError); it does not look at label values (see CheckLabels).
func (m *Model) CheckBatch(b train.Batch) error {
	if len(b.Inputs) != 1 || b.Inputs[0] == nil {
		return fmt.Errorf("cifarlib: %s takes exactly one input tensor (the images), got %d", m, len(b.Inputs))
	}
	images := b.Inputs[0].Shape()
	if err := checkImages(images); err != nil {
		return err
	}
	if len(b.Labels) == 0 || b.Labels[0] == nil {
		return fmt.Errorf("cifarlib: batch has no labels: the loss needs one label tensor [batch, 1]")
	}
	return checkLabelTensor(b.Labels[0].Shape(), images.Dimensions[0], m.NumClasses)
}

// LabelsToInt32 converts host labels to the int32 class indices cifarlib's guards and
// datasets use. Integer slices of any width are converted ([]uint8 as read from CIFAR files,
// []int8, []int16, []uint16, []int32, []int64, []int, []uint32, []uint64); values that do not fit
// in int32 are refused. Float and bool slices are refused with *LabelDTypeError: class indices
// are never truncated from floats.
func LabelsToInt32(labels any) ([]int32, error) {
	switch v := labels.(type) {
	case []int32:
		return append([]int32(nil), v...), nil
	case []uint8:
		return convertLabels(v)
	case []int8:
		return convertLabels(v)
	case []int16:
		return convertLabels(v)
	case []uint16:
		return convertLabels(v)
	case []uint32:
		return convertLabels(v)
	case []int64:
		return convertLabels(v)
	case []uint64:
		return convertLabels(v)
	case []int:
		return convertLabels(v)
	case []float32:
		return nil, &LabelDTypeError{DType: "float32", Dimensions: []int{len(v)}}
	case []float64:
		return nil, &LabelDTypeError{DType: "float64", Dimensions: []int{len(v)}}
	case []bool:
		return nil, &LabelDTypeError{DType: "bool", Dimensions: []int{len(v)}}
	}
	return nil, &LabelDTypeError{DType: strings.TrimPrefix(fmt.Sprintf("%T", labels), "[]"), Dimensions: nil}
}

func convertLabels[T int8 | uint8 | int16 | uint16 | uint32 | int64 | uint64 | int](v []T) ([]int32, error) {
	out := make([]int32, len(v))
	for i, x := range v {
		if int64(x) > 1<<31-1 || int64(x) < -1<<31 || (x > 0 && uint64(x) > 1<<31-1) {
			return nil, fmt.Errorf("cifarlib: label %v at position %d does not fit in int32: it cannot be a class index", x, i)
		}
		out[i] = int32(x)
	}
	return out, nil
}
