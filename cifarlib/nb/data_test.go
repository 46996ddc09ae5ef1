package nb

import (
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/stretchr/testify/require"
)

// TestFitRecordsData: a notebook's run says it was trained on the lab's synthetic data, with its
// folder written from $CIFARLAB_DATA as the notebook shows it, and lab.Runs() has the column.
func TestFitRecordsData(t *testing.T) {
	captureOutput(t)
	backend, err := backends.New(backends.Go)
	require.NoError(t, err)
	dataDir := t.TempDir()
	t.Setenv(data.DirEnv, dataDir)
	t.Setenv(RunsEnv, "")
	lab, err := New(data.CIFAR10(), backend, dataDir)
	require.NoError(t, err)
	res, err := lab.Fit("run", settingsOf(t, lab, map[string]string{"steps": "2", "batch": "16", "no-eval": "true"}))
	require.NoError(t, err)
	require.Equal(t, data.Provenance{Dataset: "cifar10", Kind: data.KindSynthetic, Layout: "binary",
		Folder: "$CIFARLAB_DATA/synthetic/cifar-10-batches-bin", TrainImages: lab.Train.Len(), TestImages: lab.Test.Len()}, res.Data)
	table, err := lab.Runs()
	require.NoError(t, err)
	require.Contains(t, table.String(), "  synthetic  ")
}
