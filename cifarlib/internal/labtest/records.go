package labtest

import (
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/stretchr/testify/require"
)

// trainTestRecords synthesizes in-memory train and test splits.
func TrainTestRecords(t testing.TB, spec data.Spec, trainSize, testSize int, seed int64) (train, test *data.Records) {
	t.Helper()
	opts := data.SynthOptions{Seed: seed, TrainSize: trainSize, TestSize: testSize}
	train, err := data.SynthesizeRecords(spec, data.SplitTrain, opts)
	require.NoError(t, err)
	test, err = data.SynthesizeRecords(spec, data.SplitTest, opts)
	require.NoError(t, err)
	return train, test
}

// storyRecords returns n synthetic CIFAR-100 (fine) training records.
func StoryRecords(t *testing.T, n int) *data.Records {
	t.Helper()
	recs, err := data.SynthesizeRecords(data.CIFAR100(data.LabelsFine), data.SplitTrain, data.SynthOptions{Seed: 3, TrainSize: n, TestSize: 1})
	require.NoError(t, err)
	return recs
}

// hostGuardRecords makes CIFAR-100 records (all labels valid for CIFAR-100) with the given fine labels.
func HostGuardRecords(fine []byte) *data.Records {
	recs := data.NewRecords(data.CIFAR100(data.LabelsFine), "host-guard-test", len(fine))
	for i, l := range fine {
		recs.RawLabels[2*i] = l / 5
		recs.RawLabels[2*i+1] = l
	}
	return recs
}
