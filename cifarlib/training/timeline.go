package training

import (
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/gomlx/compute"
)

// runTimeline records a run's runs.Timeline: a Trainer's, or a standalone evalProgram's.
//
// How a compile is seen: GoMLX compiles lazily, when an Exec is first called with new input
// shapes, and it calls the Exec's graph function exactly once per program it compiles
// (graph.Exec.buildAndCompileGraph, in gomlx v0.28.3 as in v0.28.16); it has no compile
// callback. So the graph functions of cifarlib's programs (Trainer.modelFn for the train step,
// evalProgram.graph for evaluations) call building, and the caller asks the Exec to compile
// (model.Exec.Compile) before it calls it: the compile event is then exactly the build and the
// XLA compile. Where the program is compiled by the call itself (data-parallel runs, whose
// sharded inputs GoMLX shapes per device), built closes the event after the call, which then
// includes that first run. On an XLA backend the event is split where XLA received the program
// (backends.ProgramsSince): building the graph (runs.PhaseBuild), then the compile, or the load
// from the compile cache (runs.PhaseLoad).
type runTimeline struct {
	tl *runs.Timeline
	// backend is the run's, whose programs it records (nil: none is split).
	backend compute.Backend
	// pending is when the graph function of program began, while it is being compiled (at
	// test-time augmentation level pendingTTA, for an evaluation); pendingMark is
	// backends.ProgramMark then.
	pending        time.Time
	pendingProgram string
	pendingTTA     int
	pendingMark    int
	// lastCompileEnd is when the last compile ended: the phase it interrupted resumes there.
	lastCompileEnd time.Time
	// onEvent receives what the run or evaluation starts doing (Env.OnEvent,
	// EvalOptions.OnEvent; nil: nobody), and reasons says why a program compiles (by program;
	// ReasonFirst when not set).
	onEvent func(Event)
	reasons map[string]string
}

// event sends e to onEvent, if any.
func (rt *runTimeline) event(e Event) {
	if rt != nil && rt.onEvent != nil {
		rt.onEvent(e)
	}
}

// compiling says that program (at TTA level tta, for an evaluation) is about to compile.
func (rt *runTimeline) compiling(program string, tta int) {
	if rt == nil || rt.onEvent == nil {
		return
	}
	rt.onEvent(Event{Kind: EventCompile, Program: program, TTA: tta, Reason: rt.reason(program)})
}

// record says what the timeline just recorded, e (its phase, program and duration: the
// timeline's own figures), to onEvent (EventTimed). Every event of the timeline goes through
// it (add, built, steps and the variable initialisation's compile): a status line says the
// timeline's durations, whatever the phase.
func (rt *runTimeline) record(e *runs.Event) {
	if rt != nil && rt.onEvent != nil {
		timed := *e
		rt.onEvent(Event{Kind: EventTimed, Timed: &timed})
	}
}

// reason says why program compiles: reasons', or ReasonFirst.
func (rt *runTimeline) reason(program string) string {
	if r := rt.reasons[program]; r != "" {
		return r
	}
	return ReasonFirst
}

// newRunTimeline starts a timeline from origin (zero: the process start) whose first event is
// the origin until now.
func newRunTimeline(origin time.Time) *runTimeline {
	rt := &runTimeline{tl: runs.NewTimeline(origin)}
	rt.tl.Add(runs.PhaseStart, rt.tl.Origin, time.Now())
	return rt
}

// add records phase from began until now, starting after any compile that ended since began.
func (rt *runTimeline) add(phase runs.Phase, began time.Time) *runs.Event {
	if rt.lastCompileEnd.After(began) {
		began = rt.lastCompileEnd
	}
	e := rt.tl.Add(phase, began, time.Now())
	rt.record(e)
	return e
}

// building is called by the graph function of program (at TTA level tta, for an evaluation):
// GoMLX is building it to compile it.
func (rt *runTimeline) building(program string, tta int) {
	if rt != nil && rt.pending.IsZero() {
		rt.pending, rt.pendingProgram, rt.pendingTTA, rt.pendingMark = time.Now(), program, tta, backends.ProgramMark()
		rt.compiling(program, tta)
	}
}

// built records the compile of the program being built, if any, as a compile for purpose, and
// reports whether there was one.
func (rt *runTimeline) built(purpose string) bool {
	if rt == nil || rt.pending.IsZero() {
		return false
	}
	now := time.Now()
	rt.prepared(rt.pendingProgram, purpose, rt.pendingTTA, rt.pending, now, rt.pendingMark)
	rt.pending, rt.lastCompileEnd = time.Time{}, now
	return true
}

// prepared records how program (at TTA level tta) was made ready for purpose, from began (its
// graph's build began) to end: on an XLA backend, the build until XLA received its first program
// since mark (PhaseBuild), then their compile (PhaseCompile), or their load when all came from
// the compile cache (PhaseLoad, which the status line then says, with what the cache said
// meanwhile); on the pure-Go backend one PhaseCompile. Each event goes to the status line
// (record).
func (rt *runTimeline) prepared(program, purpose string, tta int, began, end time.Time, mark int) {
	recs := backends.ProgramsSince(rt.backend, mark)
	phase := runs.PhaseCompile
	if len(recs) > 0 {
		if built := recs[0].Start; built.After(began) && built.Before(end) {
			rt.programEvent(runs.PhaseBuild, program, purpose, tta, began, built)
			began = built
		}
		phase = runs.PhaseLoad
	}
	for _, r := range recs {
		if !r.Loaded {
			phase = runs.PhaseCompile
		}
		for _, note := range r.Notes {
			rt.event(Event{Kind: EventPhase, Text: note})
		}
	}
	if phase == runs.PhaseLoad {
		rt.event(Event{Kind: EventCompile, Program: program, TTA: tta, Reason: rt.reason(program), Cached: true})
	}
	rt.programEvent(phase, program, purpose, tta, began, end)
}

// programEvent records phase of program (for purpose, at TTA level tta) from began to end, and
// sends it to the status line.
func (rt *runTimeline) programEvent(phase runs.Phase, program, purpose string, tta int, began, end time.Time) *runs.Event {
	e := rt.tl.Add(phase, began, end)
	e.Program, e.For, e.TTA = program, purpose, tta
	rt.record(e)
	return e
}

// compile runs fn, which compiles a program (or finds it compiled), and records the compile.
func (rt *runTimeline) compile(purpose string, fn func() error) error {
	err := fn()
	rt.built(purpose)
	return err
}

// stepsSince records the steps after the first, from firstEnd to lastEnd, less the events
// (validations, their compiles, checkpoint writes) that began between them.
func (rt *runTimeline) steps(firstEnd, lastEnd time.Time, count int) {
	if count <= 0 {
		return
	}
	from, to := firstEnd.Sub(rt.tl.Origin), lastEnd.Sub(rt.tl.Origin)
	var paused time.Duration
	for _, e := range rt.tl.Events {
		if e.Start >= from && e.Start < to {
			paused += e.Duration
		}
	}
	e := rt.tl.Add(runs.PhaseSteps, firstEnd, lastEnd)
	e.Duration, e.Count = max(0, e.Duration-paused), count
	rt.record(e)
}
