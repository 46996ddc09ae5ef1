package cifarlib

import (
	"math"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/stretchr/testify/require"
)

// smoothedCrossEntropy64 is PyTorch's CrossEntropyLoss(label_smoothing=eps) of one example in
// float64, written from its definition: (1-eps)*CE(label) + eps*mean_k(-log softmax_k).
func smoothedCrossEntropy64(logits []float32, label int, eps float64) float64 {
	var uniform float64
	for k := range logits {
		uniform += crossEntropy64(logits, k)
	}
	return (1-eps)*crossEntropy64(logits, label) + eps*uniform/float64(len(logits))
}

func TestLabelSmoothingLoss(t *testing.T) {
	m, err := NewModel(data.CIFAR10(), ArchLinear).Done()
	require.NoError(t, err)
	good := []int32{3, 5, 1, 0, 7, 9}
	for _, eps := range []float64{0, 0.2, 0.5} {
		var want float64
		for i, l := range good {
			want += smoothedCrossEntropy64(silentLogits[i], int(l), eps)
		}
		want /= float64(len(good))
		got, store, err := guardedRun(t, m.Loss().LabelSmoothing(eps).Done(), labelsColumn(good), silentLogits)
		require.NoError(t, err)
		require.InDelta(t, want, got, testenv.TolFloat32Ref, "eps %g", eps)
		require.NoError(t, checkDeviceLabels(store, 0))

		oneHot := make([][]float32, len(good))
		for i, l := range good {
			oneHot[i] = make([]float32, 10)
			oneHot[i][l] = 1
		}
		got, _, err = guardedRun(t, m.Loss().LabelSmoothing(eps).Done(), oneHot, silentLogits)
		require.NoError(t, err)
		require.InDelta(t, want, got, testenv.TolFloat32Ref, "one-hot, eps %g", eps)
	}
	// eps 0.2 differs from plain cross-entropy by more than the tolerance: the test can fail.
	require.Greater(t, math.Abs(smoothedCrossEntropy64(silentLogits[0], 3, 0.2)-crossEntropy64(silentLogits[0], 3)), 100*testenv.TolFloat32Ref)

	// The guard is unchanged: out-of-range labels are left out and reported.
	got, store, err := guardedRun(t, m.Loss().LabelSmoothing(0.2).Done(), labelsColumn(silentLabels), silentLogits)
	require.NoError(t, err)
	want := (smoothedCrossEntropy64(silentLogits[0], 3, 0.2) + smoothedCrossEntropy64(silentLogits[3], 0, 0.2) +
		smoothedCrossEntropy64(silentLogits[5], 9, 0.2)) / 3
	require.InDelta(t, want, got, testenv.TolFloat32Ref)
	var de *DeviceLabelError
	require.ErrorAs(t, checkDeviceLabels(store, 0), &de)
	require.Len(t, de.Bad, 3)

	// Unguarded, an out-of-range label silently gets the uniform part alone, and counts in the mean.
	got, _, err = guardedRun(t, m.Loss().Mode(GuardOff).LabelSmoothing(0.2).Done(), labelsColumn([]int32{3, 57}), silentLogits[:2])
	require.NoError(t, err)
	uniform := smoothedCrossEntropy64(silentLogits[1], 0, 1) // eps 1: the uniform part alone
	require.InDelta(t, (smoothedCrossEntropy64(silentLogits[0], 3, 0.2)+0.2*uniform)/2, got, testenv.TolFloat32Ref)

	for _, eps := range []float64{-0.1, 1, math.NaN()} {
		_, _, err = guardedRun(t, m.Loss().LabelSmoothing(eps).Done(), labelsColumn(good), silentLogits)
		require.ErrorContains(t, err, "is outside [0, 1)")
	}
}
