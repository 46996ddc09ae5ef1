package training

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
)

// statusEvery is how often a Status redraws its line while its work goes on without a new
// event (the elapsed time of a compile, an evaluation's progress), and the shortest time
// between two redraws of the same phase.
const statusEvery = 500 * time.Millisecond

// Status is the line that says what a run or an evaluation is doing, made from its events
// (Env.OnEvent, EvalOptions.OnEvent: pass Status.Event): each event replaces the line, which
// also says how long its phase has taken so far ("compiling the train step (first time for
// this shape)… 3.5 s", "step 1/200 running… 12.3 s", "step 57/200 · loss 1.2345 · 4.1 s"), and
// is redrawn every statusEvery while the phase goes on. What ended is said in the timeline's own
// figures (EventTimed): when a program's phase ends (a compile), a line says it and how long the
// timeline recorded ("compiled the train step (first time for this shape) in 3.13 s"). Close
// draws what the last phase did, timed by the timeline, and under it one line of the programs'
// phases ("programs: compile train step 3.13 s · …", with a reason other than ReasonFirst): a
// notebook keeps those lines.
//
// draw receives every line, with newPhase true for the first line of a phase, the line that
// ends a program's phase and Close's: a notebook cell shows each line in place of the last
// (package nb); NewLineStatus writes the new phases, and a line every lineStatusEvery of a long
// one.
type Status struct {
	prefix string
	draw   func(line string, newPhase bool)
	now    func() time.Time

	mu         sync.Mutex
	cur        Event
	has        bool
	began      time.Time // when cur's phase began
	stepsBegan time.Time // when the steps began: the first step's start, after any compile
	stepped    bool      // whether a step has ended
	drawn      time.Time // when a line was last drawn
	last       time.Time // when the last event came
	// timed is the timeline's record of cur's phase once it ended (nil: not yet), and
	// stepsTimed the timeline's time of the steps so far (the first and the rest).
	timed      *runs.Event
	stepsTimed time.Duration
	// programs are the phases of programs the timeline recorded (compiles), each with the reason
	// its compile gave when that is not ReasonFirst; reasons the reason of each compile begun.
	programs []string
	reasons  map[string]string
	stop     chan struct{}
	closed   bool
}

// NewStatus returns a Status whose lines start with prefix (e.g. `run "a": `) and go to draw. It
// redraws its line every statusEvery until Close.
func NewStatus(prefix string, draw func(line string, newPhase bool)) *Status {
	s := &Status{prefix: prefix, draw: draw, now: time.Now, stop: make(chan struct{})}
	go s.tick()
	return s
}

// lineStatusEvery is how often NewLineStatus writes a line of a phase that goes on.
const lineStatusEvery = 10 * time.Second

// NewLineStatus returns a Status that writes lines to w, as a log or a terminal keeps them:
// the first line of each phase, the end of each program's phase, a line every lineStatusEvery of
// a phase that goes on (a long compile, an evaluation's progress), and Close's.
func NewLineStatus(w io.Writer, prefix string) *Status {
	var last time.Time
	return NewStatus(prefix, func(line string, newPhase bool) {
		if now := time.Now(); newPhase || now.Sub(last) >= lineStatusEvery {
			fmt.Fprintln(w, line)
			last = now
		}
	})
}

// Event shows e: a new phase at once, the progress of the same phase at most every statusEvery;
// an EventTimed says what ended, in the timeline's figures.
func (s *Status) Event(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	now := s.now()
	s.last = now
	switch e.Kind {
	case EventTimed:
		if e.Timed != nil {
			s.timedLocked(*e.Timed)
		}
		return
	case EventCompile:
		if s.reasons == nil {
			s.reasons = map[string]string{}
		}
		s.reasons[e.phase()] = e.Reason
	case EventStepStart:
		if !s.stepped {
			s.stepsBegan = now // the steps begin after the compiles of the first step
		}
	case EventStep:
		s.stepped = true
	}
	if s.has && s.cur.phase() == e.phase() {
		s.cur = e
		if now.Sub(s.drawn) >= statusEvery {
			s.drawLocked(now, false)
		}
		return
	}
	s.cur, s.has, s.began, s.timed = e, true, now, nil
	s.drawLocked(now, true)
}

// timedLocked takes in what the timeline recorded: a program's compile or load is said at once
// (its line, with its duration) and kept for Close's list (a graph's build, before it, is left
// to the timeline); another phase's duration times
// the current phase's line when it is that phase (the steps add up).
func (s *Status) timedLocked(te runs.Event) {
	if te.Phase == runs.PhaseBuild {
		return // the timeline's own detail: the line says the compile or load it came before
	}
	cur := s.has && s.cur.phase() == compileEvent(te).phase()
	if te.Program != "" {
		item := te.String()
		if r := s.reasons[compileEvent(te).phase()]; r != "" && r != ReasonFirst {
			item += " (" + r + ")"
		}
		s.programs = append(s.programs, item)
		line := te.String()
		if cur && (te.Phase == runs.PhaseCompile || te.Phase == runs.PhaseLoad) {
			line = s.cur.Line(true) + " in " + timedSeconds(te.Duration)
			s.timed = &te
		}
		s.draw(s.prefix+line, true)
		return
	}
	switch {
	case te.Phase == runs.PhaseFirstStep || te.Phase == runs.PhaseSteps:
		s.stepsTimed += te.Duration
	case s.has && phaseOf(s.cur) == te.Phase:
		s.timed = &te
	}
}

// compileEvent is the EventCompile of the program whose phase the timeline recorded as te.
func compileEvent(te runs.Event) Event {
	return Event{Kind: EventCompile, Program: te.Program, TTA: te.TTA}
}

// phaseOf is the timeline's phase of what e says ("": none it records as such).
func phaseOf(e Event) runs.Phase {
	switch e.Kind {
	case EventBackend:
		return runs.PhaseBackend
	case EventData:
		return runs.PhaseData
	case EventCheckpoint:
		return runs.PhaseCheckpoint
	case EventEval:
		return e.Purpose
	}
	return ""
}

// Close stops the redraws and draws what the last phase did, timed by the timeline when it
// recorded that phase (else to its last event), or, when err is not nil, how long it went on
// until now; then, in a line of its own, the phases of the programs the timeline recorded (none
// when there was no event).
func (s *Status) Close(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	close(s.stop)
	if !s.has {
		return
	}
	line := s.doneLine(err)
	if len(s.programs) > 1 || len(s.programs) == 1 && s.cur.Kind != EventCompile {
		line += "\n" + s.prefix + "programs: " + strings.Join(s.programs, " · ")
	}
	s.draw(s.prefix+line, true)
}

// doneLine says what the last phase did and how long it took (Close).
func (s *Status) doneLine(err error) string {
	now := s.now()
	since := s.began
	if s.cur.Kind == EventStep || s.cur.Kind == EventStepStart {
		since = s.stepsBegan
	}
	if err != nil {
		return strings.TrimSuffix(s.cur.Line(false), "…") + " · stopped after " + seconds(now.Sub(since))
	}
	took := seconds(s.last.Sub(since)) // what the last phase did ended with its last event
	switch {
	case (s.cur.Kind == EventStep || s.cur.Kind == EventStepStart) && s.stepsTimed > 0:
		took = timedSeconds(s.stepsTimed)
	case s.timed != nil:
		took = timedSeconds(s.timed.Duration)
	}
	if s.cur.Kind == EventStep {
		return s.cur.Line(true) + " · " + took
	}
	return s.cur.Line(true) + " in " + took
}

// drawLocked draws the current line, with the time its phase has taken.
func (s *Status) drawLocked(now time.Time, newPhase bool) {
	since := s.began
	if s.cur.Kind == EventStep || s.cur.Kind == EventStepStart {
		since = s.stepsBegan
	}
	line := s.cur.Line(false)
	if strings.HasSuffix(line, "…") {
		line += " " + seconds(now.Sub(since))
	} else {
		line += " · " + seconds(now.Sub(since))
	}
	s.draw(s.prefix+line, newPhase)
	s.drawn = now
}

// tick redraws the line every statusEvery when no event did, until Close.
func (s *Status) tick() {
	t := time.NewTicker(statusEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			if now := s.now(); s.has && !s.closed && now.Sub(s.drawn) >= statusEvery {
				s.drawLocked(now, false)
			}
			s.mu.Unlock()
		}
	}
}

// timedSeconds writes a duration the timeline recorded as the timeline writes it: "3.13 s".
func timedSeconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// seconds writes d as a status line does: "0.4 s", "12.3 s", "2 min 5 s".
func seconds(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
}
