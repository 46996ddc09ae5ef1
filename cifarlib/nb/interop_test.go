package nb

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/interop"
)

// TestLabImportTransferExport: the notebook's one-call forms. A PyTorch file imported as a run
// of the CIFAR-10 lab is loaded like a trained run, carried to CIFAR-100 by the CIFAR-100 lab's
// Transfer (keeping the imported run's normalisation), and the fine-tuned run exported for
// PyTorch; importing again replaces the run.
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
	require.Equal(t, "cnn", ck.Info.Model.Arch)

	res, err := lab100.Transfer("from-pytorch", "pytorch", settingsOf(t, lab100, map[string]string{"model": cifarlib.ArchCNN, "steps": "1",
		"batch": "8", "no-eval": "true"}))
	require.NoError(t, err)
	require.Equal(t, 100, res.Transfer.Head)

	out := filepath.Join(t.TempDir(), "c100.safetensors")
	exp, err := lab100.Export("from-pytorch", out, "")
	require.NoError(t, err)
	require.Equal(t, 100, exp.NumClasses)
	require.Equal(t, interop.NamesCNNTwin, exp.Names)
	// The imported run's own normalisation (the twin's, CIFAR-10's) is kept by the transfer: the
	// CIFAR-100 run's model re-normalises its inputs to it, and its export asks for it.
	require.Equal(t, interop.Normalization{Mean: data.CIFAR10().Mean, Std: data.CIFAR10().Std}, exp.Normalization)
	require.Contains(t, buf.String(), "with inputs normalised by\n  transforms.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.2435, 0.2616))")
	_, err = lab100.Export("never-trained", out, "")
	require.ErrorIs(t, err, ErrNoRun)
}
