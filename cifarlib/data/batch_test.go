package data_test

import (
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"
)

func TestRecordsBatchMatchesDataset(t *testing.T) {
	recs := labtest.StoryRecords(t, 40)
	b, err := recs.Batch(8, 16)
	require.NoError(t, err)
	require.Equal(t, 16, b.Size())
	require.Equal(t, []int{16, data.ImageHeight, data.ImageWidth, data.ImageChannels}, b.Images.Shape().Dimensions)
	require.Equal(t, []int{16, 1}, b.Labels.Shape().Dimensions)

	// The same examples as a Dataset yields them, unshuffled: its second batch of 8 and third.
	ds, err := data.NewDataset("d", recs, data.DatasetOptions{BatchSize: 8, Epochs: 1})
	require.NoError(t, err)
	var want []*data.HostBatch
	for hb, err := range ds.HostBatches() {
		require.NoError(t, err)
		want = append(want, hb)
	}
	require.Equal(t, append(append([]int32(nil), want[1].Labels...), want[2].Labels...), b.Host.Labels)
	require.Equal(t, append(append([]int(nil), want[1].Examples...), want[2].Examples...), b.Host.Examples)
	require.Equal(t, append(append([]float32(nil), want[1].Images...), want[2].Images...), tensors.MustCopyFlatData[float32](b.Images))
	require.Equal(t, b.Host.Labels, tensors.MustCopyFlatData[int32](b.Labels))
}

func TestRecordsBatchRange(t *testing.T) {
	recs := labtest.StoryRecords(t, 10)
	for _, c := range []struct{ start, n int }{{0, 0}, {-1, 2}, {5, 6}, {10, 1}} {
		_, err := recs.Batch(c.start, c.n)
		require.ErrorContains(t, err, "are not within its 10 records", "Batch(%d, %d)", c.start, c.n)
	}
	var nilRecs *data.Records
	_, err := nilRecs.Batch(0, 1)
	require.ErrorContains(t, err, "records are nil")
}

func TestLabelStats(t *testing.T) {
	spec := data.CIFAR10()
	recs := data.NewRecords(spec, "hand-made", 5)
	for i, l := range []byte{3, 9, 0, 3, 7} {
		recs.RawLabels[i] = l
	}
	s := recs.LabelStats(4)
	require.Equal(t, data.SplitLabels{Source: "hand-made", Count: 5, Min: 0, Max: 9, Histogram: []int{1, 0, 0, 2, 0, 0, 0, 1, 0, 1},
		BeyondHead: 2, FirstBeyondHead: []int{1, 4}, HeadWidth: 4, Dataset: "cifar10"}, s) // Kind "": records made by hand
	require.Equal(t, "5 labels (hand-made): 0..9, 4 of 10 classes present; 2 (40%) are >= the head's 4 outputs", s.String())
}
