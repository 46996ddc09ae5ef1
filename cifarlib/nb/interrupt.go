package nb

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/internal/labproc"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// ErrInterrupted is what errors.Is finds in the error Fit (and Transfer) return when training
// was interrupted: Kernel → Interrupt in JupyterLab, which GoNB delivers to the cell's program as
// SIGINT, as Ctrl-C does to `cifarlab train`.
var ErrInterrupted = training.ErrInterrupted

// InterruptedError is the error of a run interrupted while it trained: the step it reached, and
// where its checkpoint is (training's, which a sweep stopped by Ctrl-C returns too). Running the
// same Fit call again continues it from that step; Load gives the model as it was saved.
type InterruptedError = training.InterruptedError

// interruptedError is the error of the run called name in dir (as the cell shows it),
// interrupted at step of target.
func interruptedError(name, dir string, step, target int) *InterruptedError {
	return &InterruptedError{Run: name, Dir: dir, Step: step, Target: target, Resume: fmt.Sprintf("Run this cell again to "+
		"continue from step %d (the same lab.Fit call resumes), or use lab.Load(%q) for the model as it is now.", step, name)}
}

// savingError is the error of a cell that left before the lab process saved its run called name
// in dir: GoNB kills a cell's program 5 s after the interrupt, and the lab process, where Fit
// runs, finishes the step it is in (now.Step, 0 when none has started) and then saves it.
func savingError(name, dir string, now training.StepNow) *InterruptedError {
	e := &InterruptedError{Run: name, Dir: dir, Step: now.Step, Target: now.Target, Saving: true}
	switch {
	case now.StepsDone:
		e.Resume = fmt.Sprintf("run %q trained its %d steps and is saved; the lab process stops its final evaluation; "+
			"re-run this cell to evaluate it", name, now.Target)
	case now.Step == 0 && now.Target == 0:
		e.Resume = fmt.Sprintf("the lab process saves run %q after the current step; re-run this cell to continue from there", name)
	case now.Step == 0:
		e.Resume = fmt.Sprintf("the lab process stops run %q before its first step; re-run this cell to start it", name)
	case now.Step == now.Target:
		e.Resume = fmt.Sprintf("the lab process finishes run %q's last step (step %d of %d) and saves it; "+
			"lab.Load(%q) gets it once saved", name, now.Step, now.Target, name)
	default:
		e.Resume = fmt.Sprintf("the lab process saves run %q after the current step (step %d of %d); "+
			"re-run this cell to continue from there", name, now.Step, now.Target)
	}
	return e
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

// A cell whose own program the out-of-memory killer ended cannot say so: GoNB shows only
// "signal: killed". The kernel's next cell says it, before anything else: that memory ran out,
// the limit, and what to do (labproc.CellMemory compares the memory cgroup's counts with the
// previous cell's).
func init() {
	if inLabProcess || !InNotebook() || os.Getenv(labproc.GoNBTmpEnv) == "" {
		return
	}
	folder, err := labproc.Folder(os.Getenv(labproc.GoNBTmpEnv))
	if err != nil {
		return
	}
	if oom := labproc.CellMemory(folder); oom != nil {
		fmt.Fprintf(output(), "nb: %s since this notebook's previous cell began: the kernel's out-of-memory killer "+
			"ended a process of this kernel's machine or container; if the previous cell ended with \"signal: killed\", "+
			"it was that cell's program. To go on, %s\n", oom, oom.Advice())
	}
}
