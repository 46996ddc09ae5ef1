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

	"github.com/stretchr/testify/require"
)

func TestCheckpointProblem(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, json string
		bin        bool
		want       string
	}{
		{"complete", `{"Variables": [{"ParameterName": "/w"}]}`, true, ""},
		{"empty", ``, true, "its .json is empty"},
		{"truncated", `{"Variables": [{"Param`, true, "its .json does not parse: unexpected end of JSON input"},
		{"novars", `{"Params": []}`, true, "its .json lists no variables"},
		{"nobin", `{"Variables": []}`, false, "its .bin is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := filepath.Join(dir, "checkpoint-"+tc.name)
			require.NoError(t, os.WriteFile(base+".json", []byte(tc.json), 0o644))
			if tc.bin {
				require.NoError(t, os.WriteFile(base+".bin", []byte("data"), 0o644))
			}
			require.Equal(t, tc.want, checkpointProblem(base))
		})
	}
	require.Contains(t, checkpointProblem(filepath.Join(dir, "checkpoint-gone")), "no such file or directory")
}

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
	var ice *IncompleteCheckpointError
	require.ErrorAs(t, err, &ice)
	require.Equal(t, &IncompleteCheckpointError{Dir: dir, Files: []string{broken}, Reason: "its .json is empty"}, ice)
	require.EqualError(t, err, "training: checkpoint "+broken+" in "+dir+" is incomplete (its .json is empty; a save "+
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
