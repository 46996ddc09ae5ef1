package training

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/checkpoint"
	"github.com/stretchr/testify/require"
)

func TestLoadCheckpointErrors(t *testing.T) {
	b := labtest.Backend(t)
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := LoadCheckpoint(missing, b)
	require.True(t, errors.Is(err, ErrNoCheckpoint))
	require.True(t, errors.Is(err, os.ErrNotExist))
	_, statErr := os.Stat(missing)
	require.True(t, errors.Is(statErr, os.ErrNotExist), "LoadCheckpoint must not create the directory")

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	_, err = LoadCheckpoint(file, b)
	require.EqualError(t, err, "training: no checkpoint: "+file+" is a file, not a checkpoint directory")

	empty := t.TempDir()
	_, err = LoadCheckpoint(empty, b)
	require.EqualError(t, err, "training: no checkpoint in "+empty+": train with a checkpoint directory first (cifarlab train --checkpoint "+empty+")")

	// A GoMLX checkpoint that cifarlib did not write.
	foreign := t.TempDir()
	store := model.NewStore()
	store.RootScope().SetParam("learning_rate", 0.1)
	store.RootScope().VariableWithValue("w", float32(1))
	h, err := checkpoint.Build(store).Dir(foreign).Done()
	require.NoError(t, err)
	require.NoError(t, h.Save())
	_, err = LoadCheckpoint(foreign, b)
	require.EqualError(t, err, "training: "+foreign+` holds a GoMLX checkpoint that cifarlib did not write (no "cifarlab_model" parameter)`)
	trainRecs, _ := labtest.TrainTestRecords(t, data.CIFAR10(), 40, 1, 1)
	_, err = NewTrainer(Config{Spec: data.CIFAR10(), TrainRecords: trainRecs, SkipFinalEval: true, Steps: 2,
		CheckpointDir: foreign, Backend: b})
	require.EqualError(t, err, "training: "+foreign+` holds a GoMLX checkpoint that cifarlib did not write (no "cifarlab_model" `+
		"parameter): use another checkpoint directory")
}

func TestCheckpointInfoCompare(t *testing.T) {
	cfg, err := resolve(Config{Spec: data.CIFAR100(data.LabelsCoarse), Steps: 100, Schedule: ScheduleCosine, WarmupSteps: 10}, nil)
	require.NoError(t, err)
	saved := checkpointInfoFromConfig(&cfg.Config)
	require.Equal(t, CheckpointInfo{Dataset: "cifar100", Labels: "coarse", Model: "cnn", Head: 20, BatchSize: 32, Optimizer: "adam",
		LearningRate: 0.001, Schedule: "cosine", WarmupSteps: 10, Steps: 100}, saved)
	spec, err := saved.Spec()
	require.NoError(t, err)
	require.Equal(t, "cifar100-coarse", spec.ID())

	want := saved
	want.Unguarded = true // The guard may change on resume.
	require.Empty(t, saved.compareForResume(want))
	want.Steps = 200 // The cosine schedule spans the steps.
	want.Model = "resnet20"
	require.Equal(t, []string{"model: saved cnn, requested resnet20", "steps (the cosine schedule spans them): saved 100, requested 200"},
		saved.compareForResume(want))
	saved.Schedule, want.Schedule, want.Model = ScheduleConstant, ScheduleConstant, "cnn"
	require.Empty(t, saved.compareForResume(want), "steps only matter to the cosine schedule")
}
