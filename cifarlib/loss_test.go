package cifarlib

import (
	"errors"
	"math"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/loss"
	"github.com/stretchr/testify/require"
)

// silentLabels is the measured case: 10 logits, labels 57, -1 and 10 are out of range.
var silentLabels = []int32{3, 57, -1, 0, 10, 9}

// silentLogits are fixed logits for the six examples (10 classes each).
var silentLogits = [][]float32{
	{0.5, -1.2, 0.3, 0.1, 2.0, -0.4, 0.9, 0.0, -2.1, 1.1},
	{1.5, 0.2, -0.3, 0.8, -1.0, 0.4, 0.6, -0.7, 0.0, 0.3},
	{-0.2, 0.7, 1.9, -1.4, 0.5, 0.0, 0.3, 0.8, -0.6, 1.0},
	{0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5, 1.5, 2.5, 0.1},
	{0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3},
	{-1.0, 0.4, 0.8, -0.5, 1.2, 0.9, -0.3, 0.2, 0.7, 1.6},
}

// crossEntropy64 computes -log(softmax(logits)[label]) in float64, independently of GoMLX.
func crossEntropy64(logits []float32, label int) float64 {
	maxV := math.Inf(-1)
	for _, v := range logits {
		maxV = math.Max(maxV, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - maxV)
	}
	return -(float64(logits[label]) - maxV - math.Log(sum))
}

func labelsColumn(labels []int32) [][]int32 {
	col := make([][]int32, len(labels))
	for i, l := range labels {
		col[i] = []int32{l}
	}
	return col
}

// TestUnguardedLossIsSilent proves GoMLX's plain sparse cross-entropy (GuardOff) is silent on
// out-of-range labels on the test backend (pure Go, or XLA CPU in CI's second pass, where the
// zero is a negative zero, still == 0): those rows get a loss of exactly 0 and a gradient of
// exactly 0, but still count in the mean.
func TestUnguardedLossIsSilent(t *testing.T) {
	m, err := NewModel(data.CIFAR10(), ArchLinear).Done()
	require.NoError(t, err)
	plain := m.LossFn(GuardOff)
	n := len(silentLabels)
	outs, err := graph.ExecOnceN(labtest.Backend(t), func(labels, logits *graph.Node) []*graph.Node {
		results := make([]*graph.Node, 0, n+2)
		for i := range n {
			row := func(x *graph.Node) *graph.Node { return graph.Slice(x, graph.AxisRange(i, i+1)) }
			results = append(results, plain([]*graph.Node{row(labels)}, []*graph.Node{row(logits)}))
		}
		mean := plain([]*graph.Node{labels}, []*graph.Node{logits})
		results = append(results, mean, graph.Gradient(mean, logits)[0])
		return results
	}, labelsColumn(silentLabels), silentLogits)
	require.NoError(t, err)

	var sum float64
	for i, l := range silentLabels {
		got := float64(tensors.ToScalar[float32](outs[i]))
		if l < 0 || l >= 10 {
			require.Equal(t, 0.0, got, "example %d (label %d) must get exactly zero loss", i, l)
			continue
		}
		want := crossEntropy64(silentLogits[i], int(l))
		require.InDelta(t, want, got, testenv.TolFloat32Ref, "example %d", i)
		sum += want
	}
	// Out-of-range rows still count in the mean: divide by 6, not 3.
	require.InDelta(t, sum/float64(n), float64(tensors.ToScalar[float32](outs[n])), testenv.TolFloat32Ref)
	grad := outs[n+1].Value().([][]float32)
	for _, i := range []int{1, 2, 4} {
		for j, v := range grad[i] {
			require.Equal(t, float32(0), v, "gradient of example %d, logit %d", i, j)
		}
	}
	require.NotEqual(t, float32(0), grad[0][3])
}

// guardedRun builds model.Exec running lossFn on (labels, logits) and returns the loss and the store.
func guardedRun(t *testing.T, lossFn loss.LossFn, labels, logits any) (float64, *model.Store, error) {
	t.Helper()
	store := model.NewStore()
	out, err := model.CallOnceN(labtest.Backend(t), store, func(scope *model.Scope, labels, logits *graph.Node) *graph.Node {
		return lossFn([]*graph.Node{labels}, []*graph.Node{logits})
	}, labels, logits)
	if err != nil {
		return 0, store, err
	}
	return float64(tensors.ToScalar[float32](out[0])), store, nil
}

func TestGuardedLossValues(t *testing.T) {
	m, err := NewModel(data.CIFAR10(), ArchLinear).Done()
	require.NoError(t, err)
	good := []int32{3, 5, 1, 0, 7, 9}
	var want float64
	for i, l := range good {
		want += crossEntropy64(silentLogits[i], int(l))
	}
	want /= float64(len(good))
	got, store, err := guardedRun(t, m.LossFn(GuardAll), labelsColumn(good), silentLogits)
	require.NoError(t, err)
	require.InDelta(t, want, got, testenv.TolFloat32Ref)
	require.NoError(t, checkDeviceLabels(store, 0))

	// Same loss with uint8 and int64 labels (converted in the graph) and with rank-1 labels.
	u8 := make([]uint8, len(good))
	i64 := make([][]int64, len(good))
	for i, l := range good {
		u8[i], i64[i] = uint8(l), []int64{int64(l)}
	}
	for _, labels := range []any{u8, i64, good} {
		got, _, err = guardedRun(t, m.LossFn(GuardAll), labels, silentLogits)
		require.NoError(t, err)
		require.InDelta(t, want, got, testenv.TolFloat32Ref)
	}

	// One-hot float labels of the head's width give the same loss.
	oneHot := make([][]float32, len(good))
	for i, l := range good {
		oneHot[i] = make([]float32, 10)
		oneHot[i][l] = 1
	}
	got, _, err = guardedRun(t, m.LossFn(GuardAll), oneHot, silentLogits)
	require.NoError(t, err)
	require.InDelta(t, want, got, testenv.TolFloat32Ref)
}

// TestStaticGuardHeadMismatch reproduces the bug: a 10-output head with CIFAR-100 labels.
func TestStaticGuardHeadMismatch(t *testing.T) {
	m, err := NewModel(data.CIFAR100(data.LabelsFine), ArchCNN).Head(10).Done()
	require.NoError(t, err)
	_, _, err = guardedRun(t, m.LossFn(GuardAll), labelsColumn(silentLabels), silentLogits)
	var hm *HeadMismatchError
	require.ErrorAs(t, err, &hm)
	require.True(t, errors.Is(err, ErrHeadMismatch))
	require.Equal(t, &HeadMismatchError{Dataset: "cifar100", HeadWidth: 10, NumClasses: 100, Overridden: true}, hm)
	require.Equal(t, "model head has 10 outputs but dataset cifar100 has 100 classes (head overridden to 10): "+
		"build the model with cifarlib's factory for cifar100, or set the head to 100", hm.Error())

	// A loss for the dataset alone (no model) says the same without the override note.
	_, _, err = guardedRun(t, NewLoss(data.CIFAR100(data.LabelsCoarse)).Done(), labelsColumn(silentLabels), silentLogits)
	require.ErrorAs(t, err, &hm)
	require.Equal(t, "model head has 10 outputs but dataset cifar100-coarse has 20 classes: "+
		"build the model with cifarlib's factory for cifar100-coarse, or set the head to 20", hm.Error())

	// GuardOff is GoMLX's plain loss: no error, the bug goes unnoticed.
	_, _, err = guardedRun(t, m.LossFn(GuardOff), labelsColumn(silentLabels), silentLogits)
	require.NoError(t, err)
}

// TestInGraphGuardCatchesDeviceLabels feeds the guarded loss labels computed on the device
// (label*7+1 % 100 style arithmetic) and checks the host-side report.
func TestInGraphGuardCatchesDeviceLabels(t *testing.T) {
	m, err := NewModel(data.CIFAR10(), ArchLinear).Done()
	require.NoError(t, err)
	guarded := m.LossFn(GuardAll)
	store := model.NewStore()
	exec, err := model.NewExec(labtest.Backend(t), store, func(scope *model.Scope, labels, logits *graph.Node) *graph.Node {
		deviceLabels := graph.Sub(graph.MulScalar(labels, 3), graph.Scalar(labels.Graph(), dtypes.Int32, 1))
		return guarded([]*graph.Node{deviceLabels}, []*graph.Node{logits})
	})
	require.NoError(t, err)
	defer exec.Finalize()
	// Host labels {3, 2, 0, 1, 4, 2} -> device labels {8, 5, -1, 2, 11, 5}: positions 2 and 4 bad.
	host := []int32{3, 2, 0, 1, 4, 2}
	out, err := exec.Call(labelsColumn(host), silentLogits)
	require.NoError(t, err)
	var want float64
	for _, i := range []int{0, 1, 3, 5} {
		want += crossEntropy64(silentLogits[i], int(host[i]*3-1))
	}
	require.InDelta(t, want/4, float64(tensors.ToScalar[float32](out[0])), 1e-5,
		"out-of-range rows are excluded from the mean")

	err = checkDeviceLabels(store, 41)
	var de *DeviceLabelError
	require.ErrorAs(t, err, &de)
	require.True(t, errors.Is(err, data.ErrLabelOutOfRange))
	require.Equal(t, &DeviceLabelError{Step: 41, NumBad: 2, Batches: 1, BatchSize: 6, NumClasses: 10,
		Bad: []data.BadLabel{{Position: 2, Example: -1, Label: -1}, {Position: 4, Example: -1, Label: 11}}}, de)
	require.Equal(t, "in-graph label guard after step 41: 2 of 6 labels that reached the loss on the device "+
		"are out of range [0, 10): position 2 label -1, position 4 label 11: the labels fed to the loss must be "+
		"class indices in [0, 10); check the graph code that computes them and that the model head matches the dataset",
		de.Error())
	// The report is cleared once read.
	require.NoError(t, checkDeviceLabels(store, 42))

	// A clean batch leaves a clean report.
	_, err = exec.Call(labelsColumn([]int32{1, 2, 3, 1, 2, 3}), silentLogits)
	require.NoError(t, err)
	require.NoError(t, checkDeviceLabels(store, 43))

	// Without a check in between (e.g. during Trainer.Eval) the report accumulates: two bad
	// batches (1 and 2 bad labels) and a clean one give the total count and the latest bad batch's positions.
	for _, labels := range [][]int32{{0, 3, 3, 3, 3, 3}, {3, 3, 3, 3, 3, 3}, {1, 3, 4, 3, 3, 0}} {
		_, err = exec.Call(labelsColumn(labels), silentLogits)
		require.NoError(t, err)
	}
	require.ErrorAs(t, checkDeviceLabels(store, -1), &de)
	require.Equal(t, &DeviceLabelError{Step: -1, NumBad: 3, Batches: 2, BatchSize: 6, NumClasses: 10,
		Bad: []data.BadLabel{{Position: 2, Example: -1, Label: 11}, {Position: 5, Example: -1, Label: -1}}}, de)
	require.Equal(t, "in-graph label guard: 3 labels that reached the loss on the device in 2 batches are out of "+
		"range [0, 10); in the latest (6 labels): position 2 label 11, position 5 label -1: the labels fed to the "+
		"loss must be class indices in [0, 10); check the graph code that computes them and that the model head "+
		"matches the dataset", de.Error())
	require.NoError(t, checkDeviceLabels(store, -1))
}

func TestInGraphGuardManyBadLabels(t *testing.T) {
	// 40 labels, all out of range for 10 classes (CIFAR-100 labels >= 10): the count is exact,
	// the first deviceGuardSlots positions are listed.
	labels := make([]int32, 40)
	logits := make([][]float32, 40)
	for i := range labels {
		labels[i] = int32(10 + i)
		logits[i] = make([]float32, 10)
	}
	m, err := NewModel(data.CIFAR10(), ArchLinear).Done()
	require.NoError(t, err)
	got, store, err := guardedRun(t, m.LossFn(GuardAll), labelsColumn(labels), logits)
	require.NoError(t, err)
	require.Equal(t, 0.0, got, "no row counted: the loss is 0, not NaN")
	var de *DeviceLabelError
	require.ErrorAs(t, checkDeviceLabels(store, -1), &de)
	require.Equal(t, 40, de.NumBad)
	require.Len(t, de.Bad, deviceGuardSlots)
	for i, b := range de.Bad {
		require.Equal(t, data.BadLabel{Position: i, Example: -1, Label: 10 + i}, b)
	}
	require.Contains(t, de.Error(), "in-graph label guard: 40 of 40 labels")
	require.Contains(t, de.Error(), "position 9 label 19, ... and 30 more:")
}

func TestIgnoreIndex(t *testing.T) {
	m, err := NewModel(data.CIFAR10(), ArchLinear).Done()
	require.NoError(t, err)
	labels := []int32{pyTorchIgnoreIndex, 3, pyTorchIgnoreIndex, 5, 0, 9}
	want := (crossEntropy64(silentLogits[1], 3) + crossEntropy64(silentLogits[3], 5) +
		crossEntropy64(silentLogits[4], 0) + crossEntropy64(silentLogits[5], 9)) / 4
	got, store, err := guardedRun(t, m.Loss().IgnoreIndex(pyTorchIgnoreIndex).Done(), labelsColumn(labels), silentLogits)
	require.NoError(t, err)
	require.InDelta(t, want, got, testenv.TolFloat32Ref)
	require.NoError(t, checkDeviceLabels(store, 0), "ignored labels are not errors")

	// Without the option, -100 is an out-of-range label.
	got, store, err = guardedRun(t, m.LossFn(GuardAll), labelsColumn(labels), silentLogits)
	require.NoError(t, err)
	require.InDelta(t, want, got, testenv.TolFloat32Ref)
	var de *DeviceLabelError
	require.ErrorAs(t, checkDeviceLabels(store, 0), &de)
	require.Equal(t, []data.BadLabel{{Position: 2 - 2, Example: -1, Label: -100}, {Position: 2, Example: -1, Label: -100}}, de.Bad)

	_, _, err = guardedRun(t, m.Loss().IgnoreIndex(3).Done(), labelsColumn(labels), silentLogits)
	require.ErrorContains(t, err, "cifarlib: ignore index 3 is a valid class of cifar10 [0, 10): choose a negative value such as -100")
}

func TestLabelContract(t *testing.T) {
	m, err := NewModel(data.CIFAR10(), ArchLinear).Done()
	require.NoError(t, err)
	lossFn := m.LossFn(GuardAll)

	// Float class indices: refused (PyTorch: "expected scalar type Long but found Float").
	floatLabels := [][]float32{{3}, {5}, {1}, {0}, {7}, {9}}
	_, _, err = guardedRun(t, lossFn, floatLabels, silentLogits)
	var dtypeErr *LabelDTypeError
	require.ErrorAs(t, err, &dtypeErr)
	require.True(t, errors.Is(err, ErrInputContract))
	require.Equal(t, "labels have dtype float32 (shape [6 1]) but class indices must be integers: convert them to "+
		"int32 class indices (narrower integer types such as uint8 are converted automatically), or pass one-hot "+
		"float labels shaped [batch, numClasses]", dtypeErr.Error())

	// One-hot labels of CIFAR-100 into a 10-class head.
	oneHot100 := make([][]float32, 6)
	for i := range oneHot100 {
		oneHot100[i] = make([]float32, 100)
		oneHot100[i][57] = 1
	}
	_, _, err = guardedRun(t, lossFn, oneHot100, silentLogits)
	var shapeErr *LabelShapeError
	require.ErrorAs(t, err, &shapeErr)
	require.Equal(t, "one-hot labels have shape [6 100] but the model head has 10 outputs: one-hot labels must be "+
		"[batch, 10]; the labels come from a dataset with 100 classes: build the model for that dataset", shapeErr.Error())

	// Integer labels with a wrong second axis.
	_, _, err = guardedRun(t, lossFn, [][]int32{{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 0}, {1, 2}}, silentLogits)
	require.ErrorAs(t, err, &shapeErr)
	require.Equal(t, "labels have shape [6 2]: sparse labels must be [batch] or [batch, 1] integer class indices "+
		"(or one-hot floats [batch, 10])", shapeErr.Error())

	// Batch sizes disagree.
	_, _, err = guardedRun(t, lossFn, labelsColumn([]int32{1, 2, 3, 4}), silentLogits)
	var batchErr *BatchSizeMismatchError
	require.ErrorAs(t, err, &batchErr)
	require.Equal(t, "batch has 6 images but 4 labels: images and labels must have the same batch size; build both "+
		"from the same example indices (cifarlib's Dataset does)", batchErr.Error())

	// Boolean labels are not class indices.
	_, _, err = guardedRun(t, lossFn, []bool{true, false, true, false, true, false}, silentLogits)
	require.ErrorAs(t, err, &dtypeErr)
	require.Equal(t, "bool", dtypeErr.DType)
}
