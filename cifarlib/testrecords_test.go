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
