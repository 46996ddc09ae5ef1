package cifarlib

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/stretchr/testify/require"
)

func TestCheckLabels(t *testing.T) {
	require.NoError(t, CheckLabels([]int32{0, 9, 5}, 10, 0, nil))
	require.NoError(t, CheckLabels(nil, 10, 0, nil))

	// A correct CIFAR-10 model, with injected bad labels: negative, = n, and 255 read from a byte.
	raw := []byte{3, 255, 7}
	labels := []int32{int32(raw[0]), -1, 10, int32(raw[1]), 9, int32(raw[2])}
	err := CheckLabels(labels, 10, 7, []int{100, 101, 102, 103, 104, 105})
	var lre *data.LabelRangeError
	require.ErrorAs(t, err, &lre)
	require.True(t, errors.Is(err, data.ErrLabelOutOfRange))
	require.Equal(t, &data.LabelRangeError{Batch: 7, BatchSize: 6, NumClasses: 10, Bad: []data.BadLabel{
		{Position: 1, Example: 101, Label: -1},
		{Position: 2, Example: 102, Label: 10},
		{Position: 3, Example: 103, Label: 255},
	}}, lre)
	require.Equal(t, "batch 7: 3 of 6 labels out of range [0, 10): position 1 (example 101) label -1, "+
		"position 2 (example 102) label 10, position 3 (example 103) label 255: labels must be class indices "+
		"in [0, 10); the labels come from a dataset with more classes than the model's head (e.g. CIFAR-100 "+
		"labels for a 10-class model): build the model and the dataset from the same Spec", lre.Error())

	// Unknown batch and examples.
	err = CheckLabels([]int32{12}, 10, -1, nil)
	require.EqualError(t, err, "batch: 1 of 1 labels out of range [0, 10): position 0 label 12: labels must be "+
		"class indices in [0, 10); the labels come from a dataset with more classes than the model's head (e.g. "+
		"CIFAR-100 labels for a 10-class model): build the model and the dataset from the same Spec")
}

func TestHostGuardListsAllBadLabels(t *testing.T) {
	m, err := NewModel(data.CIFAR100(data.LabelsFine), ArchCNN).Head(10).Done()
	require.NoError(t, err)
	labels := make([]int32, 32)
	examples := make([]int, 32)
	for i := range labels {
		labels[i] = int32(i * 3) // 0, 3, ..., 93: positions 4.. are >= 10
		examples[i] = 1000 + i
	}
	err = m.HostGuard()(&data.HostBatch{Number: 2, Examples: examples, Labels: labels})
	var lre *data.LabelRangeError
	require.ErrorAs(t, err, &lre)
	require.Len(t, lre.Bad, 28)
	for i, b := range lre.Bad {
		require.Equal(t, data.BadLabel{Position: i + 4, Example: 1004 + i, Label: 3 * (i + 4)}, b)
	}
	require.Contains(t, err.Error(), "batch 2: 28 of 32 labels out of range [0, 10): position 4 (example 1004) label 12, ")
	require.Contains(t, err.Error(), "position 13 (example 1013) label 39, ... and 18 more: ")
}

// TestHostGuardStopsTrainingBeforeTheDevice: the seed's bug (CIFAR-100 data, 10-output head)
// with the host guard in the Dataset stops the loop at the first batch, before any step.
func TestHostGuardStopsTrainingBeforeTheDevice(t *testing.T) {
	m, err := NewModel(data.CIFAR100(data.LabelsFine), ArchLinear).Head(10).Done()
	require.NoError(t, err)
	ds, err := data.NewDataset("train", labtest.HostGuardRecords([]byte{3, 57, 9, 10, 99, 0}),
		data.DatasetOptions{BatchSize: 3, Epochs: 1, Check: m.HostGuard()})
	require.NoError(t, err)
	store := model.NewStore()
	trainer := train.NewTrainer(labtest.Backend(t), store, m.ModelFn, m.LossFn(GuardOff),
		optimizer.StochasticGradientDescent(), nil, nil)
	loop := train.NewLoop(trainer)
	_, err = loop.RunEpochs(ds, 1)
	var lre *data.LabelRangeError
	require.ErrorAs(t, err, &lre)
	require.Equal(t, &data.LabelRangeError{Batch: 0, BatchSize: 3, NumClasses: 10,
		Bad: []data.BadLabel{{Position: 1, Example: 1, Label: 57}}}, lre)
	require.Equal(t, int64(0), optimizer.GetGlobalStep(store), "no step ran")
	// The dataset adds its name and the epoch; the batch is named once, by the guard.
	require.Contains(t, err.Error(), `data: dataset "train" (epoch 0): batch 0: 1 of 3 labels out of range [0, 10): `+
		"position 1 (example 1) label 57: ")
}

// trainOneStep runs one guarded training step of m on a batch of zero-mean random images.
func trainOneStep(t testing.TB, m *Model, labels []int32) (float64, *model.Store) {
	t.Helper()
	batch := len(labels)
	images := make([]float32, batch*data.ImageBytes)
	for i := range images {
		images[i] = float32(math.Sin(float64(i) * 0.37))
	}
	store := model.NewStore()
	trainer := train.NewTrainer(labtest.Backend(t), store, m.ModelFn, m.LossFn(GuardAll),
		optimizer.Adam().Done(), nil, nil)
	metrics, err := trainer.TrainStep(train.Batch{
		Inputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(images, batch, 32, 32, 3)},
		Labels: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(labels, batch, 1)},
	})
	require.NoError(t, err)
	require.NoError(t, checkDeviceLabels(store, 1))
	require.Equal(t, int64(1), optimizer.GetGlobalStep(store))
	return float64(tensors.ToScalar[float32](metrics[0])), store
}

// TestTrainStepEachArchitecture trains each architecture for one step on the test backend
// (testBackend: pure Go by default, XLA CPU in CI's second pass) at a tiny batch: batch norm
// must work on both (BatchNormGraph on Go, the backend's fused ops on XLA).
func TestTrainStepEachArchitecture(t *testing.T) {
	for _, arch := range Architectures() {
		t.Run(arch, func(t *testing.T) {
			if arch == ArchResNet18 && testing.Short() {
				t.Skip("ResNet-18 train step takes a while on the go backend")
			}
			m, err := NewModel(data.CIFAR10(), arch).Backend(labtest.Backend(t)).Done()
			require.NoError(t, err)
			start := time.Now()
			lossValue, store := trainOneStep(t, m, []int32{3, 8})
			t.Logf("%s: one train step at batch 2 (incl. compilation) took %s, loss %.4f", arch, time.Since(start), lossValue)
			require.False(t, math.IsNaN(lossValue) || math.IsInf(lossValue, 0))
			require.Greater(t, lossValue, 0.0)
			if bn := map[string]string{ArchResNet18: "stem/bn", ArchResNet20: "stem/bn", ArchAirbench94: "block1/norm1"}[arch]; bn != "" {
				// The batch-norm moving averages were updated by the training step.
				v := store.GetVariable("/" + arch + "/" + bn + "/batch_normalization/mean")
				require.NotNil(t, v, "variables: %v", testenv.SortedVariablePaths(store))
				mean, err := v.Value()
				require.NoError(t, err)
				nonZero := false
				for _, x := range tensors.MustCopyFlatData[float32](mean) {
					nonZero = nonZero || x != 0
				}
				require.True(t, nonZero, "batch-norm mean still zero after a training step")
			}
		})
	}
}

// TestTrainerSurfacesGuardErrors: errors raised while GoMLX builds the train graph come back
// from Trainer.TrainStep as errors with the typed value inside (for airbench94 too, whose head
// has no bias and a scale).
func TestTrainerSurfacesGuardErrors(t *testing.T) {
	for _, arch := range []string{ArchLinear, ArchAirbench94} {
		m, err := NewModel(data.CIFAR100(data.LabelsFine), arch).Head(10).Done()
		require.NoError(t, err)
		trainer := train.NewTrainer(labtest.Backend(t), model.NewStore(), m.ModelFn, m.LossFn(GuardAll),
			optimizer.StochasticGradientDescent(), nil, nil)
		_, err = trainer.TrainStep(train.Batch{
			Inputs: []*tensors.Tensor{tensors.FromShape(shapes.Make(dtypes.Float32, 2, 32, 32, 3))},
			Labels: []*tensors.Tensor{tensors.FromValue([][]int32{{57}, {3}})},
		})
		var hm *HeadMismatchError
		require.ErrorAs(t, err, &hm, arch)
		require.Equal(t, &HeadMismatchError{Dataset: "cifar100", HeadWidth: 10, NumClasses: 100, Overridden: true}, hm, arch)
	}

	// Channels-first images through the trainer.
	m, err := NewModel(data.CIFAR10(), ArchLinear).Done()
	require.NoError(t, err)
	trainer := train.NewTrainer(labtest.Backend(t), model.NewStore(), m.ModelFn, m.LossFn(GuardAll),
		optimizer.StochasticGradientDescent(), nil, nil)
	_, err = trainer.TrainStep(train.Batch{
		Inputs: []*tensors.Tensor{tensors.FromShape(shapes.Make(dtypes.Float32, 2, 3, 32, 32))},
		Labels: []*tensors.Tensor{tensors.FromValue([][]int32{{5}, {3}})},
	})
	var ise *InputShapeError
	require.ErrorAs(t, err, &ise)
	require.True(t, ise.ChannelsFirst)
}

// TestDeviceGuardInLoop: labels shifted on the device by a custom loss wrapper are caught
// after the first step by AttachDeviceGuard, which stops the loop.
func TestDeviceGuardInLoop(t *testing.T) {
	m, err := NewModel(data.CIFAR10(), ArchLinear).Done()
	require.NoError(t, err)
	guarded := m.LossFn(GuardAll)
	shifted := func(labels, logits []*graph.Node) *graph.Node {
		l := labels[0]
		return guarded([]*graph.Node{graph.AddScalar(l, 8)}, logits) // 0..9 -> 8..17
	}
	recs := data.NewRecords(data.CIFAR10(), "device-guard-test", 4)
	copy(recs.RawLabels, []byte{0, 1, 2, 3})
	ds, err := data.NewDataset("train", recs, data.DatasetOptions{BatchSize: 4, Epochs: 1})
	require.NoError(t, err)
	store := model.NewStore()
	loop := train.NewLoop(train.NewTrainer(labtest.Backend(t), store, m.ModelFn, shifted,
		optimizer.StochasticGradientDescent(), nil, nil))
	AttachDeviceGuard(loop)
	_, err = loop.RunEpochs(ds, 1)
	var de *DeviceLabelError
	require.ErrorAs(t, err, &de)
	require.Equal(t, []data.BadLabel{{Position: 2, Example: -1, Label: 10}, {Position: 3, Example: -1, Label: 11}}, de.Bad)
	require.Equal(t, 2, de.NumBad)
	require.Equal(t, 4, de.BatchSize)
}
