package training

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

// InterruptContext returns a context that is cancelled by the first SIGINT (Ctrl-C in a
// terminal, "interrupt kernel" in GoNB) or SIGTERM: pass it to Train, and an interrupt stops
// training after the current step and saves the checkpoint. After that first signal the
// default handling is restored, so a second Ctrl-C kills the process. Call stop when done to
// release the signals.
func InterruptContext(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	ctx, stop = signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// ErrInterrupted is what errors.Is finds in an *InterruptedError.
var ErrInterrupted = errors.New("training: interrupted")

// InterruptedError is the error of training that an interrupt stopped after it saved its
// checkpoints (Kernel → Interrupt in a notebook, which GoNB delivers as SIGINT; Ctrl-C or
// SIGTERM on the command line): one run (Run, its folder Dir, the Step its checkpoint holds of
// Target), or the tasks of a sweep (Sweep: Saved, the step each stopped task's checkpoint holds,
// and NotStarted, the tasks that never started, as the sweep writes them: "task 2", "tasks 3-5"). Resume says how to go on, in the words of where it ran (a cell, a command).
// A program that ends on it exits with status 130 (proctree.ExitInterrupted).
type InterruptedError struct {
	Run, Dir     string
	Step, Target int

	Sweep      string
	Saved      map[int]int
	NotStarted string

	Resume string

	// Saving is true when the error reached its caller before the run was saved: another process
	// (the lab process) finishes the step it is in and saves it; Resume then says what it does.
	Saving bool
}

// Error implements error.
func (e *InterruptedError) Error() string {
	switch {
	case e.Saving:
		return "interrupted: " + e.Resume
	case e.Sweep == "":
		return fmt.Sprintf("run %q interrupted at step %d of %d; its checkpoint is saved in %s.\n%s", e.Run, e.Step, e.Target, e.Dir, e.Resume)
	}
	var parts []string
	for _, i := range slices.Sorted(maps.Keys(e.Saved)) {
		parts = append(parts, fmt.Sprintf("task %d saved its checkpoint at step %d", i, e.Saved[i]))
	}
	if e.NotStarted != "" {
		parts = append(parts, "not started: "+e.NotStarted)
	}
	what := ""
	if len(parts) > 0 {
		what = " (" + strings.Join(parts, "; ") + ")"
	}
	return fmt.Sprintf("sweep: %s interrupted%s: %s", e.Sweep, what, e.Resume)
}

// Is makes errors.Is(err, ErrInterrupted) true.
func (e *InterruptedError) Is(target error) bool { return target == ErrInterrupted }
