package training

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/stretchr/testify/require"
)

// eventLog collects the events of a run (Env.OnEvent).
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// kinds returns the kinds of the events, with a compile's program, an evaluation's purpose and
// a step's number, in order, each repeat of the previous one dropped.
func (l *eventLog) kinds() []string {
	var out []string
	for _, e := range l.events {
		k := string(e.Kind)
		switch e.Kind {
		case EventTimed:
			continue // what the timeline recorded: TestTimedEvents
		case EventCompile:
			k += " " + e.Program
		case EventEval:
			k += " " + string(e.Purpose)
		case EventStep, EventStepStart, EventCheckpoint:
			k += " " + cifarlib.FormatCount(e.Step)
		}
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

// A run says what it starts doing, in order, as it starts it: the data, each compile with its
// reason, every step, each evaluation's progress, each checkpoint; a second run of the same
// shapes with the programs kept compiles nothing, and one of another batch size says why it
// compiles (the ProgramKey difference).
func TestTrainEvents(t *testing.T) {
	cfg := timelineConfig(t)
	cfg.Train = nil // loaded from the data folder: the run says so
	cfg.Data.Dir = t.TempDir()
	require.NoError(t, data.Synthesize(cfg.Data.Dir, cfg.Data.Spec, data.SynthOptions{Seed: 1, TrainSize: 96, TestSize: 70}))
	log := &eventLog{}
	cfg.OnEvent = log.add
	p := &Programs{}
	cfg.Programs = p
	res, err := Train(context.Background(), cfg.Settings, cfg.Env)
	require.NoError(t, err)
	require.Equal(t, []string{"data", "compile train step", "compile variable initialisation", "step_start 1", "step 1", "step 2", "step 3",
		"eval validation", "compile evaluation", "eval validation", "checkpoint 3", "step 4", "step 5", "step 6", "eval validation",
		"checkpoint 6", "eval eval"}, log.kinds())
	for _, e := range log.events {
		if e.Kind == EventCompile {
			require.Equal(t, ReasonFirst, e.Reason, "%+v", e)
		}
		if e.Kind == EventStep {
			require.Equal(t, 6, e.Steps)
			require.Positive(t, e.Loss)
		}
	}
	last := log.events[len(log.events)-2]
	require.Equal(t, Event{Kind: EventEval, Done: 70, Examples: 70, Purpose: runs.PhaseEval, Split: "test"}, last)

	// Each event of the timeline but its start (before Train) was told as it was recorded
	// (EventTimed), with the timeline's own figures, in the order recorded.
	var timed []runs.Event
	for _, e := range log.events {
		if e.Kind == EventTimed {
			te := *e.Timed
			te.Count = 0 // an evaluation's count is set after it is told: durations are what is said
			timed = append(timed, te)
		}
	}
	var want []runs.Event
	for _, e := range res.Timeline.Events[1:] {
		e.Count = 0
		want = append(want, e)
	}
	require.Equal(t, want, timed)

	// The same shapes again, with the programs kept: nothing compiles.
	again := &eventLog{}
	cfg.OnEvent, cfg.Checkpoint.Dir = again.add, filepath.Join(t.TempDir(), "again")
	_, err = Train(context.Background(), cfg.Settings, cfg.Env)
	require.NoError(t, err)
	require.NotContains(t, strings.Join(again.kinds(), ","), "compile")
	require.Equal(t, []string{"data", "step_start 1", "step 1"}, again.kinds()[:3], "the first step says it runs as the loop starts")

	// Another batch size: a new program, and why.
	other := &eventLog{}
	cfg.OnEvent, cfg.Checkpoint.Dir, cfg.Data.BatchSize = other.add, filepath.Join(t.TempDir(), "other"), 16
	_, err = Train(context.Background(), cfg.Settings, cfg.Env)
	require.NoError(t, err)
	var compiles []Event
	for _, e := range other.events {
		if e.Kind == EventCompile && e.Program == runs.ProgramTrainStep && !e.Cached { // (a load follows with Cached)
			compiles = append(compiles, e)
		}
	}
	require.Len(t, compiles, 1)
	require.Equal(t, "new program: batch size 16, not 8", compiles[0].Reason)
	require.Equal(t, "compiling the train step (new program: batch size 16, not 8)…", compiles[0].Line(false))
}

// An evaluation alone reports to EvalOptions.OnEvent: its start, its compile, each batch.
func TestEvaluateEvents(t *testing.T) {
	cfg := timelineConfig(t)
	cfg.Eval.Every, cfg.Eval.SkipFinal = EvalOff, true
	res, err := Train(context.Background(), cfg.Settings, cfg.Env)
	require.NoError(t, err)
	ck, err := LoadCheckpoint(cfg.Checkpoint.Dir, cfg.Backend)
	require.NoError(t, err)
	log := &eventLog{}
	_, err = ck.Evaluate(context.Background(), cfg.Test, EvalOptions{BatchSize: 32, TTA: TTAMirrorTranslate, OnEvent: log.add})
	require.NoError(t, err)
	require.Equal(t, []string{"eval eval", "compile evaluation", "eval eval"}, log.kinds())
	var done []int
	var lines []string
	for _, e := range log.events {
		if e.Kind == EventEval {
			done = append(done, e.Done)
			lines = append(lines, e.Line(false))
			require.Equal(t, 70, e.Examples)
			require.Equal(t, TTAMirrorTranslate, e.TTA)
		}
	}
	require.Equal(t, []int{0, 32, 64, 70}, done)
	require.Equal(t, "evaluating 70 images with TTA level 2 (6 views)… 32/70", lines[1])
	var timed []string // the compile as the timeline recorded it (on XLA after its build)
	for _, e := range log.events {
		if e.Kind == EventTimed && e.Timed.Program != "" {
			timed = append(timed, string(e.Timed.Phase)+" "+e.Timed.Program)
		}
	}
	require.Contains(t, [][]string{{"compile evaluation"}, {"build evaluation", "compile evaluation"}, {"build evaluation", "load evaluation"}}, timed)
	_ = res
}

// The lines of events, as a cell and the CLI print them.
func TestEventLines(t *testing.T) {
	for _, c := range []struct {
		e          Event
		doing, did string
	}{
		{Event{Kind: EventCompile, Program: runs.ProgramTrainStep, Reason: ReasonFirst},
			"compiling the train step (first time for this shape)…", "compiled the train step (first time for this shape)"},
		{Event{Kind: EventCompile, Program: runs.ProgramTrainStep, Reason: ReasonFirst, Cached: true},
			"loading the train step from the cache…", "loaded the train step from the cache"},
		{Event{Kind: EventStep, Step: 1, Steps: 1200, Loss: 2.30258},
			"step 1/1200 · loss 2.3026", "step 1/1200 · loss 2.3026"},
		{Event{Kind: EventStepStart, Step: 1, Steps: 8}, "step 1/8 running…", "step 1/8 running"},
		{Event{Kind: EventCompile, Program: runs.ProgramEvaluation, TTA: TTAMirrorTranslate, Reason: ReasonFirst},
			"compiling the evaluation with TTA level 2 (first time for this shape)…", "compiled the evaluation with TTA level 2 (first time for this shape)"},
		{Event{Kind: EventTimed, Timed: &runs.Event{Phase: runs.PhaseCompile, Program: runs.ProgramInit, For: runs.ProgramTrainStep, Duration: 3130 * time.Millisecond}},
			"compile variable initialisation (train step) 3.13 s", "compile variable initialisation (train step) 3.13 s"},
		{Event{Kind: EventEval, Examples: 10000, Done: 3000, TTA: 2, Purpose: runs.PhaseEval, Split: "test"},
			"evaluating 10,000 images with TTA level 2 (6 views)… 3,000/10,000", "evaluated 10,000 images with TTA level 2 (6 views)"},
		{Event{Kind: EventEval, Examples: 500, Done: 100, Purpose: runs.PhaseValidation, Split: "test"},
			"validating on 500 images… 100/500", "validated on 500 images"},
		{Event{Kind: EventEval, Examples: 20000, TTA: 1, Purpose: runs.PhaseEval, Split: "train"},
			"evaluating 20,000 images of the train split with TTA level 1 (2 views)… 0/20,000",
			"evaluated 20,000 images of the train split with TTA level 1 (2 views)"},
		{Event{Kind: EventCheckpoint, Step: 40}, "saving the checkpoint at step 40…", "saved the checkpoint at step 40"},
		{Event{Kind: EventData}, "loading the data…", "loaded the data"},
		{Event{Kind: EventBackend}, "creating the backend…", "created the backend"},
	} {
		require.Equal(t, c.doing, c.e.Line(false))
		require.Equal(t, c.did, c.e.Line(true))
	}
	require.Equal(t, 1, ttaViewCount(TTANone))
	require.Equal(t, 2, ttaViewCount(TTAMirror))
	require.Equal(t, 6, ttaViewCount(TTAMirrorTranslate))
}

// A Status draws a new phase at once, the progress of the same phase at most every
// statusEvery, "step 1/N running" with its elapsed time while the first step runs, the end of a
// compile and what the last phase did on Close in the timeline's figures (EventTimed), then the
// programs' phases in a line of their own; its clock is a fake.
func TestStatus(t *testing.T) {
	type drawn struct {
		line     string
		newPhase bool
	}
	var mu sync.Mutex
	var lines []drawn
	s := &Status{prefix: `run "a": `, stop: make(chan struct{}), draw: func(line string, newPhase bool) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, drawn{line, newPhase})
	}}
	clock := time.Unix(1000, 0)
	s.now = func() time.Time { return clock }
	timed := func(phase runs.Phase, program string, d time.Duration, count int) Event {
		return Event{Kind: EventTimed, Timed: &runs.Event{Phase: phase, Program: program, For: program, Duration: d, Count: count}}
	}
	s.Event(Event{Kind: EventCompile, Program: runs.ProgramTrainStep, Reason: ReasonFirst})
	clock = clock.Add(3500 * time.Millisecond)
	s.Event(timed(runs.PhaseCompile, runs.ProgramTrainStep, 3130*time.Millisecond, 0))
	s.Event(Event{Kind: EventCompile, Program: runs.ProgramInit, Reason: "new program: batch size 64, not 32"})
	clock = clock.Add(300 * time.Millisecond)
	s.Event(timed(runs.PhaseCompile, runs.ProgramInit, 210*time.Millisecond, 0))
	s.Event(Event{Kind: EventStepStart, Step: 1, Steps: 3})
	clock = clock.Add(12300 * time.Millisecond)
	s.Event(Event{Kind: EventStep, Step: 1, Steps: 3, Loss: 2.5})
	s.Event(timed(runs.PhaseFirstStep, "", 12250*time.Millisecond, 0))
	clock = clock.Add(100 * time.Millisecond)
	s.Event(Event{Kind: EventStep, Step: 2, Steps: 3, Loss: 2.4}) // too soon: not drawn
	clock = clock.Add(600 * time.Millisecond)
	s.Event(Event{Kind: EventStep, Step: 3, Steps: 3, Loss: 2.3})
	s.Event(timed(runs.PhaseSteps, "", 680*time.Millisecond, 2))
	clock = clock.Add(time.Second) // the steps ended with the last event
	s.Close(nil)
	s.Event(Event{Kind: EventData}) // after Close: nothing
	require.Equal(t, []drawn{
		{`run "a": compiling the train step (first time for this shape)… 0.0 s`, true},
		{`run "a": compiled the train step (first time for this shape) in 3.13 s`, true},
		{`run "a": compiling the variable initialisation (new program: batch size 64, not 32)… 0.0 s`, true},
		{`run "a": compiled the variable initialisation (new program: batch size 64, not 32) in 0.21 s`, true},
		{`run "a": step 1/3 running… 0.0 s`, true},
		{`run "a": step 1/3 · loss 2.5000 · 12.3 s`, false},
		{`run "a": step 3/3 · loss 2.3000 · 13.0 s`, false},
		{`run "a": step 3/3 · loss 2.3000 · 12.93 s` + "\n" +
			`run "a": programs: compile train step 3.13 s · compile variable initialisation 0.21 s (new program: batch size 64, not 32)`, true},
	}, lines)

	// Stopped by an error: how long the phase went on.
	lines = nil
	s = &Status{prefix: `run "b": `, stop: make(chan struct{}), now: s.now, draw: s.draw}
	s.Event(Event{Kind: EventEval, Examples: 100, Purpose: runs.PhaseEval, Split: "test"})
	clock = clock.Add(2 * time.Second)
	s.Close(context.Canceled)
	require.Equal(t, drawn{`run "b": evaluating 100 images… 0/100 · stopped after 2.0 s`, true}, lines[len(lines)-1])

	// An evaluation: its compile, then its time as the timeline recorded it, less the compile.
	lines = nil
	s = &Status{prefix: "", stop: make(chan struct{}), now: s.now, draw: s.draw}
	ev := Event{Kind: EventEval, Examples: 100, TTA: TTAMirrorTranslate, Purpose: runs.PhaseEval, Split: "test"}
	s.Event(ev)
	s.Event(Event{Kind: EventCompile, Program: runs.ProgramEvaluation, TTA: TTAMirrorTranslate, Reason: ReasonFirst})
	clock = clock.Add(2 * time.Second)
	s.Event(Event{Kind: EventTimed, Timed: &runs.Event{Phase: runs.PhaseCompile, Program: runs.ProgramEvaluation, For: "eval", TTA: 2, Duration: 1900 * time.Millisecond}})
	ev.Done = 100
	s.Event(ev)
	clock = clock.Add(5 * time.Second)
	s.Event(Event{Kind: EventTimed, Timed: &runs.Event{Phase: runs.PhaseEval, Duration: 5040 * time.Millisecond, Count: 100}})
	s.Close(nil)
	require.Equal(t, []drawn{
		{"evaluating 100 images with TTA level 2 (6 views)… 0/100 · 0.0 s", true},
		{"compiling the evaluation with TTA level 2 (first time for this shape)… 0.0 s", true},
		{"compiled the evaluation with TTA level 2 (first time for this shape) in 1.90 s", true},
		{"evaluating 100 images with TTA level 2 (6 views)… 100/100 · 0.0 s", true},
		{"evaluated 100 images with TTA level 2 (6 views) in 5.04 s\nprograms: compile evaluation (eval, TTA level 2) 1.90 s", true},
	}, lines)
}

// A run on a lazy backend (backends.Lazy, nb.Open's) trains exactly as on the backend New gives:
// the backend is created by its first computation, once, and the trained model computes on it.
func TestTrainOnLazyBackend(t *testing.T) {
	testenv.XLACPUPluginOrSkip(t)
	cfg := timelineConfig(t)
	cfg.Eval.Every, cfg.Checkpoint.Every = EvalOff, 0
	eager, err := backends.New("cpu")
	require.NoError(t, err)
	cfg.Backend = eager
	want, err := Train(context.Background(), cfg.Settings, cfg.Env)
	require.NoError(t, err)

	lazy, err := backends.Lazy("cpu")
	require.NoError(t, err)
	before := backends.Clients()
	cfg.Backend, cfg.Checkpoint.Dir = lazy, filepath.Join(t.TempDir(), "lazy")
	got, err := Train(context.Background(), cfg.Settings, cfg.Env)
	require.NoError(t, err)
	require.Equal(t, before+1, backends.Clients())
	require.Equal(t, want.Loss, got.Loss)
	require.Equal(t, want.Eval.Confusion, got.Eval.Confusion)
	require.Equal(t, trainVars(t, want.Store), trainVars(t, got.Store))
	b, err := cfg.Test.Batch(0, 4)
	require.NoError(t, err)
	_, err = got.Logits(b.Images)
	require.NoError(t, err)
}
