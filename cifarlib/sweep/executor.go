package sweep

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Executor runs or submits a sweep's tasks: Local runs them on this machine, Slurm submits
// them as one job array. The command picks one executor and calls it the same way for a new
// sweep and a resubmitted one; another executor (another scheduler) is one more type.
type Executor interface {
	// DryRun says what Submit would do with tasks of s, and does nothing.
	DryRun(s *Sweep, tasks []int) (string, error)
	// Submit runs or submits tasks of s, records the submission in sweep.json and says what
	// it did in one line. An executor that runs the tasks itself returns when they have ended;
	// cancelling ctx then stops them as a Ctrl-C stops `cifarlab train` (*InterruptedError).
	Submit(ctx context.Context, s *Sweep, tasks []int) (string, error)
}

var (
	_ Executor = (*Local)(nil)
	_ Executor = (*Slurm)(nil)
)

// InterruptedError reports a sweep stopped before all its tasks ran (Ctrl-C or SIGTERM on a
// local sweep): the running tasks saved their checkpoints at the step they reached, the tasks
// not started stay so, and running the sweep again resumes them all.
type InterruptedError struct {
	Sweep, Runs string
	// Saved maps each interrupted task to the step its checkpoint holds; NotStarted are the
	// tasks that never started.
	Saved      map[int]int
	NotStarted []int
}

func (e *InterruptedError) Error() string {
	var parts []string
	for _, i := range slices.Sorted(maps.Keys(e.Saved)) {
		parts = append(parts, fmt.Sprintf("task %d saved its checkpoint at step %d", i, e.Saved[i]))
	}
	if n := len(e.NotStarted); n > 0 {
		parts = append(parts, fmt.Sprintf("not started: task%s %s", map[bool]string{true: "s"}[n > 1], ArraySpec(e.NotStarted)))
	}
	what := ""
	if len(parts) > 0 {
		what = " (" + strings.Join(parts, "; ") + ")"
	}
	return fmt.Sprintf("sweep: %s interrupted%s: run the same `cifarlab sweep` command again to resume "+
		"(or `cifarlab sweep resubmit --runs %s --name %s --local`)", e.Sweep, what, e.Runs, e.Sweep)
}
