package nb

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// ErrInterrupted is what errors.Is finds in the error Fit (and Transfer) return when training
// was interrupted: Kernel → Interrupt in JupyterLab, which GoNB delivers to the cell's program as
// SIGINT, as Ctrl-C does to `cifarlab train`.
var ErrInterrupted = errors.New("nb: training interrupted")

// exitInterrupted is the exit status of a cell stopped by an interrupt (128 + SIGINT, as a
// shell reports a program Ctrl-C stopped, and as `cifarlab train` exits then).
const exitInterrupted = 130

// InterruptedError is the error of a run interrupted while it trained: the step it reached, and
// where its checkpoint is. Running the same Fit call again continues it from that step; Load
// gives the model as it was saved.
type InterruptedError struct {
	// Run is the run's name, Dir its folder.
	Run, Dir string
	// Step is the last completed step, saved in the checkpoint; Target the step asked for.
	Step, Target int
	// Saving is true when the cell left before the run was saved: GoNB kills a cell's program
	// 5 s after the interrupt, and the kernel's lab process, where Fit runs, finishes the step
	// it is in (Step, 0 when none has started) and then saves it. StepsDone: the steps were
	// over, and it was the final evaluation that stopped.
	Saving, StepsDone bool
}

// savingNote is what the run's lock says while the lab process saves it after an interrupt,
// e.g. "finishing step 3 of 10, then saving".
func savingNote(now training.StepNow) string {
	switch {
	case now.StepsDone:
		return fmt.Sprintf("saved at step %d, stopping its final evaluation", now.Target)
	case now.Step == 0:
		return "stopping before its first step"
	}
	return fmt.Sprintf("finishing step %d of %d, then saving", now.Step, now.Target)
}

// Error implements error.
func (e *InterruptedError) Error() string {
	if e.Saving {
		switch {
		case e.StepsDone:
			return fmt.Sprintf("interrupted: run %q trained its %d steps and is saved; the lab process stops its final evaluation; "+
				"re-run this cell to evaluate it", e.Run, e.Target)
		case e.Step == 0 && e.Target == 0:
			return fmt.Sprintf("interrupted: the lab process saves run %q after the current step; re-run this cell to continue from there", e.Run)
		case e.Step == 0:
			return fmt.Sprintf("interrupted: the lab process stops run %q before its first step; re-run this cell to start it", e.Run)
		case e.Step == e.Target:
			return fmt.Sprintf("interrupted: the lab process finishes run %q's last step (step %d of %d) and saves it; "+
				"lab.Load(%q) gets it once saved", e.Run, e.Step, e.Target, e.Run)
		}
		return fmt.Sprintf("interrupted: the lab process saves run %q after the current step (step %d of %d); "+
			"re-run this cell to continue from there", e.Run, e.Step, e.Target)
	}
	return fmt.Sprintf("run %q interrupted at step %d of %d; its checkpoint is saved in %s.\n"+
		"Run this cell again to continue from step %d (the same lab.Fit call resumes), "+
		"or use lab.Load(%q) for the model as it is now.", e.Run, e.Step, e.Target, shownPath(e.Dir), e.Step, e.Run)
}

// Is makes errors.Is(err, ErrInterrupted) true.
func (e *InterruptedError) Is(target error) bool { return target == ErrInterrupted }

// interruptedRun says whether dir holds a run that was interrupted (run.json says so), and the
// step it reached: Fit resumes such a run rather than starting it again.
func interruptedRun(dir string) (step int, ok bool) {
	rec, err := runs.ReadRecord(dir)
	if err != nil || rec.Status != runs.RunInterrupted {
		return 0, false
	}
	var res training.Result
	if json.Unmarshal(rec.Result, &res) == nil {
		step = res.EndStep
	}
	return step, true
}

// restartNote says why an interrupted run is trained again from the start instead of resumed:
// its checkpoint was saved with other settings than the cell's now.
func restartNote(name string, err error) (string, bool) {
	var mismatch *training.CheckpointMismatchError
	if !errors.As(err, &mismatch) {
		return "", false
	}
	return fmt.Sprintf("run %q: interrupted earlier with other settings (%s); training it again from the start\n",
		name, strings.Join(mismatch.Diffs, "; ")), true
}

// removeRun removes the folder of a previous run of the same name.
func removeRun(name, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("nb: removing the previous run %q: %w", name, err)
	}
	return nil
}
