package cifarlib

import (
	"errors"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/stretchr/testify/require"
)

func TestCheckBatch(t *testing.T) {
	m, err := NewModel(data.CIFAR10(), ArchCNN).Done()
	require.NoError(t, err)
	images := func(dims ...int) *tensors.Tensor { return tensors.FromShape(shapes.Make(dtypes.Float32, dims...)) }
	labels := func(dt dtypes.DType, dims ...int) *tensors.Tensor { return tensors.FromShape(shapes.Make(dt, dims...)) }
	batch := func(img, lab *tensors.Tensor) train.Batch {
		return train.Batch{Inputs: []*tensors.Tensor{img}, Labels: []*tensors.Tensor{lab}}
	}

	require.NoError(t, m.CheckBatch(batch(images(4, 32, 32, 3), labels(dtypes.Int32, 4, 1))))
	require.NoError(t, m.CheckBatch(batch(images(4, 32, 32, 3), labels(dtypes.Uint8, 4))))
	require.NoError(t, m.CheckBatch(batch(images(4, 32, 32, 3), labels(dtypes.Float32, 4, 10))), "one-hot of the head's width")

	cases := []struct {
		name string
		b    train.Batch
		msg  string
	}{
		{"channels-first", batch(images(4, 3, 32, 32), labels(dtypes.Int32, 4, 1)),
			"images have shape [4 3 32 32], which is channels-first [batch, 3, 32, 32] (PyTorch's NCHW): cifarlib " +
				"models take channels-last [batch, 32, 32, 3]: transpose the axes (0, 2, 3, 1), e.g. " +
				"graph.TransposeAllAxes(x, 0, 2, 3, 1), or use cifarlib's Dataset"},
		{"flat rows", batch(images(4, 3072), labels(dtypes.Int32, 4, 1)),
			"images have rank 2 (shape [4 3072]) but a 4D tensor [batch, 32, 32, 3] is expected: a single image needs " +
				"a batch axis (graph.InsertAxes(x, 0)); flat rows of 3072 values need a reshape to [batch, 32, 32, 3]"},
		{"batch sizes", batch(images(4, 32, 32, 3), labels(dtypes.Int32, 3, 1)),
			"batch has 4 images but 3 labels: images and labels must have the same batch size; build both from the " +
				"same example indices (cifarlib's Dataset does)"},
		{"float indices", batch(images(4, 32, 32, 3), labels(dtypes.Float32, 4, 1)),
			"labels have dtype float32 (shape [4 1]) but class indices must be integers: convert them to int32 class " +
				"indices (narrower integer types such as uint8 are converted automatically), or pass one-hot float " +
				"labels shaped [batch, numClasses]"},
		{"float64 indices rank 1", batch(images(4, 32, 32, 3), labels(dtypes.Float64, 4)),
			"labels have dtype float64 (shape [4]) but class indices must be integers: convert them to int32 class " +
				"indices (narrower integer types such as uint8 are converted automatically), or pass one-hot float " +
				"labels shaped [batch, numClasses]"},
		{"one-hot of CIFAR-100", batch(images(4, 32, 32, 3), labels(dtypes.Float32, 4, 100)),
			"one-hot labels have shape [4 100] but the model head has 10 outputs: one-hot labels must be [batch, 10]; " +
				"the labels come from a dataset with 100 classes: build the model for that dataset"},
		{"rank 3 labels", batch(images(4, 32, 32, 3), labels(dtypes.Int32, 4, 1, 1)),
			"labels have shape [4 1 1]: sparse labels must be [batch] or [batch, 1] integer class indices (or one-hot " +
				"floats [batch, 10])"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := m.CheckBatch(c.b)
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrInputContract), "%v", err)
			require.Equal(t, c.msg, err.Error())
		})
	}
	require.EqualError(t, m.CheckBatch(train.Batch{}), "cifarlib: cnn for cifar10 (10 classes) takes exactly one input tensor (the images), got 0")
	require.EqualError(t, m.CheckBatch(train.Batch{Inputs: []*tensors.Tensor{images(1, 32, 32, 3)}}),
		"cifarlib: batch has no labels: the loss needs one label tensor [batch, 1]")
}

func TestLabelsToInt32(t *testing.T) {
	for _, in := range []any{[]uint8{3, 255}, []int8{3, -1}, []int16{3, 1000}, []uint16{3, 7}, []int64{3, 57},
		[]int{3, 99}, []uint32{3, 4}, []uint64{3, 5}} {
		got, err := LabelsToInt32(in)
		require.NoError(t, err, "%T", in)
		require.Equal(t, int32(3), got[0])
	}
	got, err := LabelsToInt32([]uint8{255})
	require.NoError(t, err)
	require.Equal(t, []int32{255}, got, "a byte 255 stays 255 (and the host guard reports it)")
	got, err = LabelsToInt32([]int8{-1})
	require.NoError(t, err)
	require.Equal(t, []int32{-1}, got)

	_, err = LabelsToInt32([]float32{3, 5})
	var de *LabelDTypeError
	require.ErrorAs(t, err, &de)
	require.Equal(t, "labels have dtype float32 (shape [2]) but class indices must be integers: convert them to int32 "+
		"class indices (narrower integer types such as uint8 are converted automatically), or pass one-hot float "+
		"labels shaped [batch, numClasses]", err.Error())
	_, err = LabelsToInt32([]float64{1})
	require.ErrorAs(t, err, &de)
	_, err = LabelsToInt32([]string{"cat"})
	require.ErrorAs(t, err, &de)
	require.Equal(t, "string", de.DType)
	_, err = LabelsToInt32([]int64{1 << 40})
	require.EqualError(t, err, "cifarlib: label 1099511627776 at position 0 does not fit in int32: it cannot be a class index")
	_, err = LabelsToInt32([]uint64{1 << 63})
	require.EqualError(t, err, "cifarlib: label 9223372036854775808 at position 0 does not fit in int32: it cannot be a class index")
}
