package nb

import (
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/stretchr/testify/require"
)

// interruptingAtStep4 is an Env whose OnPoint sends this process a SIGINT at step 4, as the
// kernel's interrupt does, and returns once it is delivered.
func interruptingAtStep4() training.Env {
	var interrupting training.Env
	interrupting.OnPoint = func(p runs.HistoryPoint) error {
		if p.Step != 4 {
			return nil
		}
		// The signal arrives asynchronously: wait until it is delivered (to this channel as to
		// Fit's), and give Fit's handler a moment to cancel, so that a step of a millisecond
		// does not finish the run first.
		delivered := make(chan os.Signal, 1)
		signal.Notify(delivered, syscall.SIGINT)
		defer signal.Stop(delivered)
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
			return err
		}
		<-delivered
		time.Sleep(200 * time.Millisecond)
		return nil
	}
	return interrupting
}

// TestFitInterruptedResumes sends the process the SIGINT GoNB sends a cell's program on Kernel →
// Interrupt, while Fit trains at step 4: Fit saves, returns *InterruptedError (ErrInterrupted)
// with the result at the step reached, run.json says interrupted; Load gets the model at that
// step; the same Fit call resumes and ends with the loss of a run never interrupted; Fit with
// other settings starts again. internal/kernel/interrupt_test.go does the same through the real kernel.
func TestFitInterruptedResumes(t *testing.T) {
	buf := captureOutput(t)
	t.Setenv(data.DirEnv, "") // messages show the folder as it is
	lab := goLab(t, data.CIFAR10())
	cfg := settingsOf(t, lab, map[string]string{"steps": "12", "batch": "16", "seed": "3", "no-eval": "true"})
	interrupting := interruptingAtStep4()
	res, err := lab.FitEnv("run", cfg, interrupting)
	var ie *InterruptedError
	require.ErrorAs(t, err, &ie)
	require.True(t, errors.Is(err, ErrInterrupted))
	dir := filepath.Join(lab.DataDir, "runs", "run")
	require.Equal(t, *interruptedError("run", dir, res.EndStep, 12), *ie)
	require.True(t, res.Interrupted)
	step := res.EndStep
	require.GreaterOrEqual(t, step, 4, "the step of the signal completes")
	require.Less(t, step, 12)
	require.Equal(t, `run "run" interrupted at step `+strconv.Itoa(step)+` of 12; its checkpoint is saved in `+dir+`.
Run this cell again to continue from step `+strconv.Itoa(step)+` (the same lab.Fit call resumes), or use lab.Load("run") for the model as it is now.`, err.Error())
	rec, err := runs.ReadRecord(dir)
	require.NoError(t, err)
	require.Equal(t, runs.RunInterrupted, rec.Status)

	ck, err := lab.Load("run")
	require.NoError(t, err)
	require.Equal(t, step, ck.Info.Step)
	require.Contains(t, buf.String(), `run "run": loaded linear for cifar10 (10 classes) at step `+strconv.Itoa(step)+" in ")

	resumed, err := lab.Fit("run", cfg)
	require.NoError(t, err)
	require.Contains(t, buf.String(), `run "run": resuming from step `+strconv.Itoa(step)+", where it was interrupted\n")
	require.Equal(t, step, resumed.StartStep)
	require.Equal(t, 12, resumed.EndStep)
	reference, err := lab.Fit("reference", cfg)
	require.NoError(t, err)
	require.Equal(t, reference.Loss, resumed.Loss, "the resumed run ends where an uninterrupted one does")

	// Interrupted again, then run with another seed: a fresh run, said so.
	_, err = lab.FitEnv("run", cfg, interrupting)
	require.ErrorIs(t, err, ErrInterrupted)
	other := cfg
	other.Run.Seed = 4
	fresh, err := lab.Fit("run", other)
	require.NoError(t, err)
	require.Equal(t, 0, fresh.StartStep)
	require.Contains(t, buf.String(), `run "run": interrupted earlier with other settings (seed: saved 3, requested 4); training it again from the start`)
}
