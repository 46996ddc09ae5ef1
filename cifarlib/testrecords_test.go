package cifarlib

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// trainTestRecords synthesizes in-memory train and test splits.
func trainTestRecords(t testing.TB, spec Spec, trainSize, testSize int, seed int64) (train, test *Records) {
	t.Helper()
	opts := SynthOptions{Seed: seed, TrainSize: trainSize, TestSize: testSize}
	train, err := SynthesizeRecords(spec, SplitTrain, opts)
	require.NoError(t, err)
	test, err = SynthesizeRecords(spec, SplitTest, opts)
	require.NoError(t, err)
	return train, test
}

// storyRecords returns n synthetic CIFAR-100 (fine) training records.
func storyRecords(t *testing.T, n int) *Records {
	t.Helper()
	recs, err := SynthesizeRecords(CIFAR100(LabelsFine), SplitTrain, SynthOptions{Seed: 3, TrainSize: n, TestSize: 1})
	require.NoError(t, err)
	return recs
}

// hostGuardRecords makes CIFAR-100 records (all labels valid for CIFAR-100) with the given fine labels.
func hostGuardRecords(fine []byte) *Records {
	recs := NewRecords(CIFAR100(LabelsFine), "host-guard-test", len(fine))
	for i, l := range fine {
		recs.RawLabels[2*i] = l / 5
		recs.RawLabels[2*i+1] = l
	}
	return recs
}
