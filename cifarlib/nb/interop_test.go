package nb

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/interop"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// TestLabImportTransferExport: the notebook's one-call forms. A PyTorch file imported as a run
// of the CIFAR-10 lab is loaded like a trained run, carried to CIFAR-100 by the CIFAR-100 lab's
// Transfer, and the fine-tuned run exported for PyTorch; importing again replaces the run.
func TestLabImportTransferExport(t *testing.T) {
	buf := captureOutput(t)
	lab10, lab100, _ := twoLabs(t)

	twin := filepath.Join("..", "interop", "testdata", "cnn_twin.pt")
	for range 2 {
		rep, err := lab10.Import("pytorch", twin, interop.ImportOptions{Arch: cifarlib.ArchCNN})
		require.NoError(t, err)
		require.Equal(t, data.CIFAR10().ID(), rep.Spec.ID())
	}
	require.Contains(t, buf.String(), `run "pytorch": imported `+twin+" (cnn-twin naming, 8 tensors)")
	ck, err := lab10.Load("pytorch")
	require.NoError(t, err)
	require.Equal(t, "cnn", ck.Info.Model)

	res, err := lab100.Transfer("from-pytorch", "pytorch", training.Config{Model: cifarlib.ArchCNN, Steps: 1, BatchSize: 8, SkipFinalEval: true})
	require.NoError(t, err)
	require.Equal(t, 100, res.Transfer.Head)

	out := filepath.Join(t.TempDir(), "c100.safetensors")
	exp, err := lab100.Export("from-pytorch", out, "")
	require.NoError(t, err)
	require.Equal(t, 100, exp.NumClasses)
	require.Equal(t, interop.NamesCNNTwin, exp.Names)
	require.Contains(t, buf.String(), "transforms.Normalize((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762))")
	_, err = lab100.Export("never-trained", out, "")
	require.ErrorIs(t, err, ErrNoRun)
}
