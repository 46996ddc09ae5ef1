package training

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"

	"github.com/stretchr/testify/require"
)

// TestResumeSetsAsideIncompleteCheckpoint simulates a save that was killed half-way (GoMLX
// writes the checkpoint files in place: an empty .json and a partial .bin newer than the last
// good checkpoint). Evaluating refuses it with a clear error; resuming sets it aside and continues
// from the last complete checkpoint, after which evaluating works again.
func TestResumeSetsAsideIncompleteCheckpoint(t *testing.T) {
	b := labtest.Backend(t)
	spec := data.CIFAR10()
	train, test := labtest.TrainTestRecords(t, spec, 64, 16, 3)
	dir := filepath.Join(t.TempDir(), "ckpt")
	cfg := with(t, Defaults(), map[string]string{"model": cifarlib.ArchLinear, "steps": "2", "batch": "8", "seed": "3", "no-eval": "true",
		"checkpoint": dir})
	env := Env{Train: train, Test: test, Backend: b, Progress: ProgressOff}
	res, err := Train(context.Background(), cfg, env)
	require.NoError(t, err)
	require.Equal(t, 2, res.EndStep)

	broken := "checkpoint-n9999999-20261202-000000-step-00000003"
	require.NoError(t, os.WriteFile(filepath.Join(dir, broken+".json"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, broken+".bin"), []byte("GOMLX partial"), 0o644))

	_, err = LoadCheckpoint(dir, b)
	var ice *checkpoints.IncompleteError
	require.ErrorAs(t, err, &ice)
	require.Equal(t, &checkpoints.IncompleteError{Dir: dir, Files: []string{broken}, Reason: "its .json is empty"}, ice)
	require.EqualError(t, err, "checkpoints: checkpoint "+broken+" in "+dir+" is incomplete (its .json is empty; a save "+
		"was interrupted): resume training with the same checkpoint folder to set it aside and continue from "+
		"the previous one, or delete its .json and .bin files")

	var log bytes.Buffer
	cfg.Run.Steps, env.Log = 3, &log
	trainer, err := NewTrainer(cfg, env)
	require.NoError(t, err)
	step, ok := trainer.Resumed()
	require.True(t, ok)
	require.Equal(t, 2, step)
	require.Contains(t, log.String(), "checkpoint "+broken+" in "+dir+" was incomplete (an interrupted save): set aside as "+
		broken+".{json,bin}.incomplete\n")
	require.FileExists(t, filepath.Join(dir, broken+".json.incomplete"))
	require.FileExists(t, filepath.Join(dir, broken+".bin.incomplete"))
	require.NoFileExists(t, filepath.Join(dir, broken+".json"))
	res, err = trainer.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, 3, res.EndStep)

	ck, err := LoadCheckpoint(dir, b)
	require.NoError(t, err)
	require.Equal(t, 3, ck.Info.Step)
}
