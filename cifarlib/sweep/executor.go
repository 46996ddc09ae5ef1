package sweep

import (
	"context"
	"fmt"
	"slices"

	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// Executor runs or submits a sweep's tasks: Local runs them on this machine, Slurm submits
// them as one job array. The command picks one executor and calls it the same way for a new
// sweep and a resubmitted one; another executor (another scheduler) is one more type.
type Executor interface {
	// DryRun says what Submit would do with tasks of s, and does nothing.
	DryRun(s *Sweep, tasks []int) (string, error)
	// Submit runs or submits tasks of s, records the submission in sweep.json and says what
	// it did in one line. An executor that runs the tasks itself returns when they have ended;
	// cancelling ctx then stops them as a Ctrl-C stops `cifarlab train` (*training.InterruptedError).
	Submit(ctx context.Context, s *Sweep, tasks []int) (string, error)
}

var (
	_ Executor = (*Local)(nil)
	_ Executor = (*Slurm)(nil)
)

// interrupted is the error of the sweep stopped before all its tasks ran (Ctrl-C or SIGTERM on
// a local sweep): the running tasks saved their checkpoints at the steps in saved, the tasks in
// notStarted stay so, and running the sweep again resumes them all.
func (s *Sweep) interrupted(saved map[int]int, notStarted []int) error {
	e := &training.InterruptedError{Sweep: s.Name, Saved: saved, Resume: "run the same `cifarlab sweep` command again to resume " +
		"(or `cifarlab sweep resubmit --runs " + s.runs + " --name " + s.Name + " --local`)"}
	if n := len(notStarted); n > 0 {
		slices.Sort(notStarted)
		e.NotStarted = fmt.Sprintf("task%s %s", map[bool]string{true: "s"}[n > 1], ArraySpec(notStarted))
	}
	return e
}
