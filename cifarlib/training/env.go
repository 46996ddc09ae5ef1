package training

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/compute"
)

// Env is what is live around a run, beside its Settings: nothing of it is recorded or sent
// (the lab process has its own). The zero Env runs with a backend created from
// Settings.Compute, the splits loaded from Settings.Data, no log, no hooks (OnPoint, OnEvent),
// no program cache, the progress bar where there is a terminal, and a timeline from the process
// start.
type Env struct {
	// Backend is the compute backend; nil: one is created from Settings.Compute (by Programs
	// when it is set, which keeps it for later runs).
	Backend compute.Backend
	// Train and Test, when set, are the splits, instead of loading them from Settings.Data.Dir.
	Train, Test *data.Records
	// Log receives one line per Settings.Record.LogEvery steps and notes such as "resumed from
	// step N"; nil: silent.
	Log io.Writer
	// OnPoint, when set, is called with each History point as it is recorded; an error stops
	// training (the checkpoint is still saved).
	OnPoint func(runs.HistoryPoint) error
	// OnEvent, when set, is called with what the run starts doing, as it starts: creating the
	// backend, loading the data, each compile (and why), each step, each evaluation's progress,
	// each checkpoint (Event). It runs on the training goroutine: keep it short. A Status turns
	// the events into a line that says what the run is doing from its first second.
	OnEvent func(Event)
	// Warn, when set, is called by Train, before the run trains, with each thing that makes it
	// learn nothing though it trains (Trainer.Warnings: e.g. a run shorter than the lookahead's
	// period); Result.Warnings and its summary say them again.
	Warn func(warning string)
	// Progress controls GoMLX's progress bar (terminal and GoNB).
	Progress ProgressMode
	// Plot draws loss and accuracy curves that update during training, in a GoNB notebook
	// (GoMLX's plotly support); outside a notebook it does nothing.
	Plot bool
	// Programs, when set, keeps the run's compiled programs for later runs in this process, and
	// gives this run those of an earlier run with the same ProgramKey: it then compiles nothing
	// (see Programs). Nil: the run compiles its own and keeps nothing.
	Programs *Programs
	// Clock is when the run's timeline (Result.Timeline) starts: zero, the process start (a
	// notebook cell's program, a CLI run); a process that outlives notebook cells gives the start
	// of the cell it trains for.
	Clock time.Time
}

// ProgressMode says whether Train shows GoMLX's progress bar.
type ProgressMode int

const (
	// ProgressAuto shows the progress bar in a GoNB notebook or when stdout is a terminal.
	ProgressAuto ProgressMode = iota
	// ProgressOn always shows it (it writes to stdout).
	ProgressOn
	// ProgressOff never shows it.
	ProgressOff
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

// StepWatch is where a running Train is, for another goroutine to read while it trains: the
// kernel's lab process tells a cell it interrupted which step the run saves. Train reports to
// the StepWatch of its context (WithStepWatch); it costs an atomic store per step.
type StepWatch struct {
	step, target atomic.Int64
	stepsDone    atomic.Bool
}

// StepNow is a StepWatch's reading.
type StepNow struct {
	// Step is the global step being trained, counted from 1 (a resumed run counts on from its
	// checkpoint): after it the run stops when interrupted, and saves. 0 before the first step
	// has started (the run is loading, building or compiling).
	Step int
	// Target is the step the run trains to (Config.Steps); 0 before Train has resolved it.
	Target int
	// StepsDone is true once the steps are over: the run is in its final evaluation, and its
	// checkpoint is saved.
	StepsDone bool
}

// Now returns where the run is.
func (w *StepWatch) Now() StepNow {
	return StepNow{Step: int(w.step.Load()), Target: int(w.target.Load()), StepsDone: w.stepsDone.Load()}
}

type stepWatchKey struct{}

// WithStepWatch returns a context, below ctx, under which Train reports its steps to w.
func WithStepWatch(ctx context.Context, w *StepWatch) context.Context {
	return context.WithValue(ctx, stepWatchKey{}, w)
}

// stepWatchOf returns the StepWatch of ctx, or nil.
func stepWatchOf(ctx context.Context) *StepWatch {
	w, _ := ctx.Value(stepWatchKey{}).(*StepWatch)
	return w
}

// starting reports that the run trains to target from here (nil w: nothing).
func (w *StepWatch) starting(target int) {
	if w != nil {
		w.target.Store(int64(target))
	}
}

// training reports that global step (from 1) has started.
func (w *StepWatch) training(step int) {
	if w != nil {
		w.step.Store(int64(step))
	}
}

// done reports that the steps are over.
func (w *StepWatch) done() {
	if w != nil {
		w.stepsDone.Store(true)
	}
}
