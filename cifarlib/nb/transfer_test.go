package nb

import (
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"

	"github.com/stretchr/testify/require"
)

// TestLabTransfer: a CIFAR-10 lab's run, loaded unchanged into the CIFAR-100 lab's model, is
// refused with the size-mismatch error; Transfer carries it (the same run folder), trains, and
// reports it; a linear probe does too; a missing source is ErrNoRun.
func TestLabTransfer(t *testing.T) {
	buf := captureOutput(t)
	lab10, lab100, dataDir := twoLabs(t)
	_, err := lab10.Fit("c10", settingsOf(t, lab10, map[string]string{"steps": "3", "batch": "16", "no-eval": "true"}))
	require.NoError(t, err)

	_, err = lab100.LoadFor("c10")
	var sm *checkpoints.ShapeMismatchError
	require.ErrorAs(t, err, &sm)
	require.Equal(t, []int{3072, 10}, sm.Saved)
	require.Equal(t, []int{3072, 100}, sm.Model)
	ck, err := lab10.LoadFor("c10")
	require.NoError(t, err)
	require.Equal(t, 3, ck.Info.Step)
	require.Contains(t, buf.String(), `run "c10": loaded into linear for cifar10 (10 classes) at step 3 in `)

	res, err := lab100.Transfer("c100", "c10", settingsOf(t, lab100, map[string]string{"steps": "2", "batch": "16", "no-eval": "true"}))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dataDir, "runs", "c10"), res.Transfer.From)
	require.Equal(t, 100, res.Transfer.Head)
	require.Equal(t, 100, res.HeadWidth)
	probe, err := lab100.Transfer("probe", "c10", settingsOf(t, lab100, map[string]string{"steps": "2", "batch": "16", "no-eval": "true",
		"freeze": training.FreezeBackbone}))
	require.NoError(t, err)
	require.Equal(t, training.FreezeBackbone, probe.Transfer.Freeze)
	back, err := lab100.Load("c100")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dataDir, "runs", "c10"), back.Info.Transfer.From)

	_, err = lab100.Transfer("x", "never", settingsOf(t, lab100, map[string]string{"steps": "1"}))
	require.ErrorIs(t, err, ErrNoRun)
}

// twoLabs returns a CIFAR-10 and a CIFAR-100 lab on the pure-Go backend sharing a new data
// folder (and so its runs folder), and that folder.
func twoLabs(t *testing.T) (lab10, lab100 *Lab, dataDir string) {
	t.Helper()
	backend, err := backends.New(backends.Go)
	require.NoError(t, err)
	dataDir = t.TempDir()
	t.Setenv(RunsEnv, "")
	lab10, err = New(data.CIFAR10(), backend, dataDir)
	require.NoError(t, err)
	lab100, err = New(data.CIFAR100(data.LabelsFine), backend, dataDir)
	require.NoError(t, err)
	return lab10, lab100, dataDir
}
