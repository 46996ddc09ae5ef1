package training

import (
	"context"
	"sync/atomic"
)

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
