package training

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// StatusEvery is how often a Status redraws its line while its work goes on without a new
// event (the elapsed time of a compile, an evaluation's progress), and the shortest time
// between two redraws of the same phase.
const StatusEvery = 500 * time.Millisecond

// Status is the line that says what a run or an evaluation is doing, made from its events
// (Config.OnEvent, EvalOptions.OnEvent: pass Status.Event): each event replaces the line, which
// also says how long its phase has taken so far ("compiling the train step (first time for
// this shape)… 3.5 s", "step 57/200 · loss 1.2345 · 4.1 s"), and is redrawn every StatusEvery
// while the phase goes on. When a compile ends, a line says how long it took. Close draws what
// the last phase did, and the compiles with their reasons: a notebook keeps that line.
//
// draw receives every line, with newPhase true for the first line of a phase, the line that
// ends a compile and Close's: a notebook cell shows each line in place of the last (package
// nb); NewLineStatus writes the new phases, and a line every LineStatusEvery of a long one.
type Status struct {
	prefix string
	draw   func(line string, newPhase bool)
	now    func() time.Time

	mu         sync.Mutex
	cur        Event
	has        bool
	began      time.Time // when cur's phase began
	stepsBegan time.Time // the first step event's time
	drawn      time.Time // when a line was last drawn
	last       time.Time // when the last event came
	compiled   []string  // what each compile that ended compiled, why, and how long it took
	stop       chan struct{}
	closed     bool
}

// NewStatus returns a Status whose lines start with prefix (e.g. `run "a": `) and go to draw. It
// redraws its line every StatusEvery until Close.
func NewStatus(prefix string, draw func(line string, newPhase bool)) *Status {
	s := &Status{prefix: prefix, draw: draw, now: time.Now, stop: make(chan struct{})}
	go s.tick()
	return s
}

// LineStatusEvery is how often NewLineStatus writes a line of a phase that goes on.
const LineStatusEvery = 10 * time.Second

// NewLineStatus returns a Status that writes lines to w, as a log or a terminal keeps them:
// the first line of each phase, the end of each compile, a line every LineStatusEvery of a
// phase that goes on (a long compile, an evaluation's progress), and Close's.
func NewLineStatus(w io.Writer, prefix string) *Status {
	var last time.Time
	return NewStatus(prefix, func(line string, newPhase bool) {
		if now := time.Now(); newPhase || now.Sub(last) >= LineStatusEvery {
			fmt.Fprintln(w, line)
			last = now
		}
	})
}

// Event shows e: a new phase at once, the progress of the same phase at most every StatusEvery.
func (s *Status) Event(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	now := s.now()
	s.last = now
	if e.Kind == EventStep && s.stepsBegan.IsZero() {
		s.stepsBegan = now
	}
	if s.has && s.cur.phase() == e.phase() {
		s.cur = e
		if now.Sub(s.drawn) >= StatusEvery {
			s.drawLocked(now, false)
		}
		return
	}
	if s.has && s.cur.Kind == EventCompile {
		done := s.cur.Line(true) + " in " + seconds(now.Sub(s.began))
		s.compiled = append(s.compiled, done)
		s.draw(s.prefix+done, true)
	}
	s.cur, s.has, s.began = e, true, now
	s.drawLocked(now, true)
}

// Close stops the redraws and draws what the last phase did, timed to its last event, or, when
// err is not nil, how long it went on until now, then the compiles that ended (nothing when there
// was no event).
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
	now := s.now()
	if err == nil { // what the last phase did ended with its last event
		now = s.last
	}
	since, sep := s.began, " in "
	if s.cur.Kind == EventStep {
		since, sep = s.stepsBegan, " · "
	}
	line := s.cur.Line(true) + sep + seconds(now.Sub(since))
	if err != nil {
		line = strings.TrimSuffix(s.cur.Line(false), "…") + " · stopped after " + seconds(now.Sub(since))
	}
	if s.cur.Kind != EventCompile && len(s.compiled) > 0 {
		line += " (" + strings.Join(s.compiled, "; ") + ")"
	}
	s.draw(s.prefix+line, true)
}

// drawLocked draws the current line, with the time its phase has taken.
func (s *Status) drawLocked(now time.Time, newPhase bool) {
	since := s.began
	if s.cur.Kind == EventStep {
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

// tick redraws the line every StatusEvery when no event did, until Close.
func (s *Status) tick() {
	t := time.NewTicker(StatusEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			if now := s.now(); s.has && !s.closed && now.Sub(s.drawn) >= StatusEvery {
				s.drawLocked(now, false)
			}
			s.mu.Unlock()
		}
	}
}

// seconds writes d as a status line does: "0.4 s", "12.3 s", "2 min 5 s".
func seconds(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
}
