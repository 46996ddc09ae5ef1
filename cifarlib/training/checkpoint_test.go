package training

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/checkpoint"
	"github.com/stretchr/testify/require"
)

func TestLoadCheckpointErrors(t *testing.T) {
	b := labtest.Backend(t)
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := LoadCheckpoint(missing, b)
	require.True(t, errors.Is(err, checkpoints.ErrNoCheckpoint))
	require.True(t, errors.Is(err, os.ErrNotExist))
	_, statErr := os.Stat(missing)
	require.True(t, errors.Is(statErr, os.ErrNotExist), "LoadCheckpoint must not create the directory")

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	_, err = LoadCheckpoint(file, b)
	require.EqualError(t, err, "checkpoints: no checkpoint: "+file+" is a file, not a checkpoint folder")

	empty := t.TempDir()
	_, err = LoadCheckpoint(empty, b)
	require.EqualError(t, err, "checkpoints: no checkpoint in "+empty+": train a run with it as its checkpoint folder first (Checkpoint.Dir, the setting checkpoint)")

	// A GoMLX checkpoint that cifarlib did not write.
	foreign := t.TempDir()
	store := model.NewStore()
	store.RootScope().SetParam("learning_rate", 0.1)
	store.RootScope().VariableWithValue("w", float32(1))
	h, err := checkpoint.Build(store).Dir(foreign).Done()
	require.NoError(t, err)
	require.NoError(t, h.Save())
	_, err = LoadCheckpoint(foreign, b)
	require.EqualError(t, err, "checkpoints: "+foreign+` holds a GoMLX checkpoint that cifarlib did not write (no "cifarlab_model" parameter)`)
	trainRecs, _ := labtest.TrainTestRecords(t, data.CIFAR10(), 40, 1, 1)
	_, err = NewTrainer(with(t, Defaults(), map[string]string{"no-eval": "true", "steps": "2", "checkpoint": foreign}),
		Env{Train: trainRecs, Backend: b})
	require.EqualError(t, err, "checkpoints: "+foreign+` holds a GoMLX checkpoint that cifarlib did not write (no "cifarlab_model" `+
		"parameter): use another checkpoint folder")
}

func TestCheckpointInfoCompare(t *testing.T) {
	s := Defaults()
	s.Data.Spec, s.Run.Steps, s.Schedule = data.CIFAR100(data.LabelsCoarse), 100, optimizers.Schedule{Name: optimizers.ScheduleCosine, WarmupSteps: 10}
	p, err := resolve(s, nil)
	require.NoError(t, err)
	require.NoError(t, p.count(50000))
	saved := CheckpointInfo{Settings: p.Settings}
	require.Equal(t, []any{"cifar100", "coarse", "cnn", 20, 32, optimizers.Optimizer(optimizers.Adam{LearningRate: 0.001}), "cosine", 10, 100},
		[]any{saved.Data.Spec.Name, saved.Data.Spec.Labels.String(), saved.Model.Arch, saved.Model.Head, saved.Data.BatchSize,
			saved.Optimizer, saved.Schedule.Name, saved.Schedule.WarmupSteps, saved.Run.Steps})
	require.Equal(t, "cifar100-coarse", saved.Data.Spec.ID())

	want := saved.Settings
	want.Model.Unguarded = true // The guard may change on resume.
	require.Empty(t, saved.compareForResume(&want))
	want.Run.Steps = 200 // The cosine schedule spans the steps.
	want.Model.Arch = "resnet20"
	require.Equal(t, []string{"model: saved cnn, requested resnet20", "steps (the cosine schedule spans them): saved 100, requested 200"},
		saved.compareForResume(&want))
	saved.Schedule.Name, want.Schedule.Name, want.Model.Arch = optimizers.ScheduleConstant, optimizers.ScheduleConstant, "cnn"
	require.Empty(t, saved.compareForResume(&want), "steps only matter to the cosine schedule")
}
