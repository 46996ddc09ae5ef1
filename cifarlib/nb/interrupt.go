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
