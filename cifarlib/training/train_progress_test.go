package training

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"

	"github.com/stretchr/testify/require"
)

// trainCaptureStdout runs fn with os.Stdout redirected to a file and returns what was written.
func trainCaptureStdout(t *testing.T, fn func()) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stdout")
	require.NoError(t, err)
	saved := os.Stdout
	os.Stdout = f
	defer func() { os.Stdout = saved }()
	fn()
	_, err = f.Seek(0, io.SeekStart)
	require.NoError(t, err)
	data, err := io.ReadAll(f)
	require.NoError(t, err)
	return string(data)
}

// GoMLX's progress bar: a table of metrics in a terminal, a one-line bar with the metrics in
// GoNB (detected from $GONB_PIPE).
func TestTrainProgressBar(t *testing.T) {
	b := labtest.Backend(t)
	spec := data.CIFAR100(data.LabelsFine)
	train, _ := labtest.TrainTestRecords(t, spec, 64, 10, 1)
	cfg := with(t, Defaults(), map[string]string{"dataset": "cifar100", "model": cifarlib.ArchLinear, "steps": "3", "batch": "8", "no-eval": "true"})
	env := Env{Train: train, Backend: b, Progress: ProgressOn}
	out := trainCaptureStdout(t, func() {
		_, err := Train(context.Background(), cfg, env)
		require.NoError(t, err)
	})
	for _, row := range []string{"Global Step", "Moving Average Loss", "Moving Average Accuracy", "Moving Average Top-5 Accuracy"} {
		require.Contains(t, out, row)
	}

	t.Setenv("GONB_PIPE", "/nonexistent-gonb-pipe")
	out = trainCaptureStdout(t, func() {
		_, err := Train(context.Background(), cfg, env)
		require.NoError(t, err)
	})
	require.Contains(t, out, " [step=2] [loss=")
	require.Contains(t, out, "[~acc=")
	require.Contains(t, out, "[~top5=")
	require.False(t, strings.Contains(out, "Global Step"))

	// Unguarded, the progress bar also shows the labels outside the head in each batch.
	cfg.Model.Head, cfg.Model.Unguarded = 10, true
	out = trainCaptureStdout(t, func() {
		_, err := Train(context.Background(), cfg, env)
		require.NoError(t, err)
	})
	require.Contains(t, out, "[bad=")

	require.False(t, progressEnabled(ProgressOff))
	require.True(t, progressEnabled(ProgressAuto), "in a notebook")
}
