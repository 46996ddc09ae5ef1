package nb

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/stretchr/testify/require"
)

// TestLabProcessErrors: an error of the lab process reaches the cell with its text, errors.Is
// finds the sentinels it wrapped, and an interrupted or busy run is its typed error again
// (Check exits 130 for the first, as in the cell's own program).
func TestLabProcessErrors(t *testing.T) {
	head := fmt.Errorf("training: %w", &cifarlib.HeadMismatchError{HeadWidth: 10, NumClasses: 100, Dataset: "cifar100"})
	got := cellError(wireError(head))
	require.EqualError(t, got, head.Error())
	require.ErrorIs(t, got, cifarlib.ErrHeadMismatch)
	require.NotErrorIs(t, got, ErrNoRun)

	interrupted := &InterruptedError{Run: "r", Dir: "/d/runs/r", Step: 12, Target: 400}
	got = cellError(wireError(fmt.Errorf("wrapped: %w", interrupted)))
	require.Equal(t, interrupted, got)
	require.ErrorIs(t, got, ErrInterrupted)

	busy := &RunBusyError{Run: "r", PID: 42}
	require.Equal(t, busy, cellError(wireError(busy)))

	plain := errors.New("nb: something")
	require.Equal(t, plain, cellError(plain), "an error of this program is left as it is")
}

// TestFitRequestTravels: a Fit's config travels to the lab process whole, but for what cannot
// leave the cell (Fit sends the lab's backend and splits as nil: the lab process has its own).
func TestFitRequestTravels(t *testing.T) {
	cfg := training.Config{Steps: 7, BatchSize: 32, Seed: 3, Head: 100, Precision: cifarlib.PrecisionBF16Mixed, EvalEvery: training.EvalOff,
		Optimizer: "adamw", LearningRate: 0.01, Devices: 2, From: "/runs/src", Params: map[string]string{"steps": "7"}}
	b, err := encode(fitRequest{Name: "n", Config: cfg, Spec: data.CIFAR100(data.LabelsFine), DataDir: "/d", RunsDir: "/r", InNotebook: true})
	require.NoError(t, err)
	var got fitRequest
	require.NoError(t, decode(b, &got))
	require.Equal(t, cfg, got.Config)
	require.Equal(t, data.CIFAR100(data.LabelsFine), got.Spec)
	require.True(t, got.InNotebook)
}

// TestLabClientOnlyForWhatTravels: Fit runs in this program outside a notebook, for a lab of
// New (its own backend), with the lab process off, and for a config with the cell's hooks.
func TestLabClientOnlyForWhatTravels(t *testing.T) {
	l := &Lab{opened: true}
	require.Nil(t, l.labClient(training.Config{}), "not a GoNB cell")
	t.Setenv("GONB_TMP_DIR", t.TempDir())
	saved := cellIO
	defer func() { cellIO = saved }()
	cellIO.notebook = func() bool { return true }
	require.NotNil(t, l.labClient(training.Config{}))
	require.Nil(t, l.labClient(training.Config{OnPoint: func(runs.HistoryPoint) error { return nil }}))
	require.Nil(t, l.labClient(training.Config{Plot: true}))
	require.Nil(t, l.labClient(training.Config{Progress: training.ProgressOn}))
	require.Nil(t, l.labClient(training.Config{TrainRecords: &data.Records{}}))
	require.Nil(t, (&Lab{}).labClient(training.Config{}), "a lab of New")
	t.Setenv(LabProcessEnv, "0")
	require.Nil(t, l.labClient(training.Config{}))
}
