package training

import (
	"bytes"
	"context"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"

	"github.com/stretchr/testify/require"
)

// End-to-end: the cnn model, the guarded loss and GoMLX's loop on synthetic data, on the test
// backend ($GOMLX_BACKEND, the pure-Go one by default). On the go backend they need 12 and 30
// steps at about 0.26 s each (batch 32, 2 idle cores, LayerOpsMatmul); -short skips them.

// trainE2E trains cnn on synthetic data of spec and returns the result.
func trainE2E(t *testing.T, spec data.Spec, steps int) *Result {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end training skipped with -short")
	}
	b := labtest.Backend(t)
	train, test := labtest.TrainTestRecords(t, spec, 1000, 200, 1)
	var log bytes.Buffer
	s := Defaults()
	s.Data.Spec, s.Model.Arch, s.Run.Steps, s.Data.BatchSize, s.Optimizer, s.Run.Seed, s.Record.LogEvery = spec, cifarlib.ArchCNN, steps, 32,
		optimizers.Adam{LearningRate: 0.003}, 1, 5
	res, err := Train(context.Background(), s, Env{Train: train, Test: test, Backend: b, Progress: ProgressOff, Log: &log})
	require.NoError(t, err)
	var summary bytes.Buffer
	require.NoError(t, res.WriteSummary(&summary))
	t.Logf("%s%s", log.String(), summary.String())
	require.True(t, res.Guarded)
	require.Equal(t, steps, res.EndStep)
	require.Equal(t, ZeroLossStats{HeadWidth: spec.NumClasses, Seen: int64(steps * 32), SplitExamples: 1000}, res.ZeroLoss)
	ev := res.Eval
	require.NotNil(t, ev)
	require.Equal(t, 200, ev.Examples)
	require.Zero(t, ev.OutOfRange)
	// Per-class counts add up to the totals.
	examples, correct := 0, 0
	for c, pc := range ev.PerClass {
		require.Equal(t, c, pc.Label)
		require.Equal(t, spec.ClassNames[c], pc.Name)
		rowSum := 0
		for _, n := range ev.Confusion[c] {
			rowSum += n
		}
		require.Equal(t, pc.Examples, rowSum)
		require.Equal(t, pc.Correct, ev.Confusion[c][c])
		examples += pc.Examples
		correct += pc.Correct
	}
	require.Equal(t, 200, examples)
	require.InDelta(t, float64(correct)/200, ev.Accuracy, 1e-12)
	return res
}

// Synthetic CIFAR-10, 12 steps of 32 images: measured test accuracy 98.0% (196/200) on the
// go backend and 88.0% (176/200) on XLA's CPU plugin; chance is 10%.
func TestTrainE2ECIFAR10CNN(t *testing.T) {
	res := trainE2E(t, data.CIFAR10(), 12)
	require.Greater(t, res.Eval.Accuracy, 0.70)
	require.Zero(t, res.Eval.TopK)
}

// Synthetic CIFAR-100 (fine labels, 100-class head), 30 steps of 32 images: measured test
// accuracy 45.0% (90/200) and top-5 accuracy 83.5% on the go backend (45.0% and 86.5% on
// XLA's CPU plugin); chance is 1% and 5%.
func TestTrainE2ECIFAR100CNN(t *testing.T) {
	res := trainE2E(t, data.CIFAR100(data.LabelsFine), 30)
	require.Equal(t, 100, res.HeadWidth)
	require.Equal(t, 5, res.Eval.TopK)
	require.Greater(t, res.Eval.Accuracy, 0.30)
	require.Greater(t, res.Eval.TopKAccuracy, 0.60)
	require.GreaterOrEqual(t, res.Eval.TopKAccuracy, res.Eval.Accuracy)
	require.NotZero(t, res.TopK)
}
