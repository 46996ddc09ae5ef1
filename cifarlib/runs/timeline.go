package runs

import (
	"fmt"
	"strings"
	"time"
)

// Phase names a part of a run's timeline.
type Phase string

// The phases of a Timeline, in the order a run goes through them.
const (
	// PhaseStart: from the timeline's origin (the process start) until Train (or Evaluate)
	// began. In a notebook cell it holds the Go program's start and nb.Open (the backend and the
	// data, when the lab made them).
	PhaseStart Phase = "start"
	// PhaseBackend: creating the compute backend (zero when the caller passed one).
	PhaseBackend Phase = "backend"
	// PhaseData: loading the splits (zero when the caller passed the records).
	PhaseData Phase = "data"
	// PhaseBuild: building one program's graph (Event.Program says which), before XLA compiles
	// it or loads it from the compile cache (its key holds the built program). Runs on the
	// pure-Go backend, which compiles nothing with XLA, count it in their PhaseCompile.
	PhaseBuild Phase = "build"
	// PhaseCompile: one XLA compile of one program (Event.Program says which), or GoMLX's
	// program that initialises the variables (ProgramInit), which it compiles and runs.
	PhaseCompile Phase = "compile"
	// PhaseLoad: one program loaded from the compile cache instead of compiled (Event.Program
	// says which): another process on this machine compiled it.
	PhaseLoad Phase = "load"
	// PhaseFirstStep: the first training step after its compile.
	PhaseFirstStep Phase = "first_step"
	// PhaseSteps: the steps after the first (Event.Count of them), from the end of the first to
	// the end of the last, less the evaluations and checkpoints run between them.
	PhaseSteps Phase = "steps"
	// PhaseValidation: one evaluation during training (Config.EvalEvery), less its compile.
	PhaseValidation Phase = "validation"
	// PhaseEval: the final evaluation (or the one of an evaluation cell), less its compile.
	PhaseEval Phase = "eval"
	// PhaseCheckpoint: one checkpoint write.
	PhaseCheckpoint Phase = "checkpoint"
)

// The programs a PhaseCompile event names.
const (
	ProgramTrainStep  = "train step"
	ProgramEvaluation = "evaluation"
	ProgramInit       = "variable initialisation"
)

// Event is one part of a Timeline.
type Event struct {
	Phase Phase `json:"phase"`
	// Program is the program a PhaseCompile compiled: ProgramTrainStep, ProgramEvaluation or
	// ProgramInit; For says for what it was compiled ("validation" or "eval" for an evaluation).
	Program string `json:"program,omitempty"`
	For     string `json:"for,omitempty"`
	// TTA is the test-time augmentation level of an evaluation program (0: none): each level is
	// a program of its own.
	TTA int `json:"tta,omitempty"`
	// Start is when it began, counted from Timeline.Origin, and Duration how long it took.
	Start    time.Duration `json:"start_ns"`
	Duration time.Duration `json:"duration_ns"`
	// Count is the number of steps of PhaseSteps and of examples of an evaluation.
	Count int `json:"count,omitempty"`
}

// End is when the event ended, counted from the process start.
func (e Event) End() time.Duration { return e.Start + e.Duration }

// Label names the event as String lists it: "build train step", "compile train step",
// "loaded train step from the cache", "compile evaluation (validation)", "compile evaluation
// (eval, TTA level 2)", "first step", "299 steps", "eval".
// An event of a program (Program set) is its phase's name and the program's, whatever the
// phase, with what it was for and its TTA level.
func (e Event) Label() string {
	switch e.Phase {
	case PhaseSteps:
		return fmt.Sprintf("%d %s", e.Count, plural(e.Count, "step"))
	case PhaseFirstStep:
		return "first step"
	}
	label := strings.ReplaceAll(string(e.Phase), "_", " ")
	if e.Program == "" {
		return label
	}
	var about []string
	if e.For != "" && e.For != e.Program {
		about = append(about, e.For)
	}
	if e.TTA > 0 {
		about = append(about, fmt.Sprintf("TTA level %d", e.TTA))
	}
	label += " " + e.Program
	if e.Phase == PhaseLoad {
		label = "loaded " + e.Program + " from the cache"
	}
	if len(about) > 0 {
		label += " (" + strings.Join(about, ", ") + ")"
	}
	return label
}

// String is the event as the timeline's String lists it, with its duration: "compile train
// step 3.13 s".
func (e Event) String() string { return e.Label() + " " + precise(e.Duration) }

// Timeline is where a run's wall time went, from the start of its process (or of the cell a
// long-lived process runs it for, training.Env.Clock): the backend, the
// data, each XLA compile and which program it was, the first step, the steps, the evaluations
// and the checkpoint writes. The events do not overlap, and are in the order they began, except
// PhaseSteps, which spans the steps and is recorded when they end.
type Timeline struct {
	// Origin is when the timeline starts: the process start, or a time its caller gave.
	// OriginFrom says which: ProcStartFrom ("/proc/self/stat": Linux's start time of the
	// process, to 10 ms), InitStartFrom ("package init": when the runs package was initialised,
	// a few milliseconds after the start) or CallerFrom ("caller").
	Origin     time.Time `json:"origin"`
	OriginFrom string    `json:"origin_from"`
	Events     []Event   `json:"events"`
}

// CallerFrom is Timeline.OriginFrom for an origin its caller gave.
const CallerFrom = "caller"

// NewTimeline returns an empty timeline from origin, or, when origin is zero, from the start
// of this process (ProcessStart).
func NewTimeline(origin time.Time) *Timeline {
	if !origin.IsZero() {
		return &Timeline{Origin: origin, OriginFrom: CallerFrom}
	}
	start, from := ProcessStart()
	return &Timeline{Origin: start, OriginFrom: from}
}

// Add records an event of phase that ran from began to ended, and returns it.
func (tl *Timeline) Add(phase Phase, began, ended time.Time) *Event {
	tl.Events = append(tl.Events, Event{Phase: phase, Start: began.Sub(tl.Origin), Duration: max(0, ended.Sub(began))})
	return &tl.Events[len(tl.Events)-1]
}

// Compiles returns the number of PhaseCompile events of program ("" counts them all).
func (tl *Timeline) Compiles(program string) int { return tl.count(PhaseCompile, program) }

// Loads returns the number of PhaseLoad events of program ("" counts them all): the programs
// loaded from the compile cache.
func (tl *Timeline) Loads(program string) int { return tl.count(PhaseLoad, program) }

// count returns the number of events of phase and program ("": any program).
func (tl *Timeline) count(phase Phase, program string) int {
	n := 0
	for _, e := range tl.Events {
		if e.Phase == phase && (program == "" || e.Program == program) {
			n++
		}
	}
	return n
}

// Programs returns the number of programs the run compiled or loaded from the compile cache
// (program: those of program; "": all of them): those the process did not keep.
func (tl *Timeline) Programs(program string) int { return tl.Compiles(program) + tl.Loads(program) }

// Total returns the summed durations of the events of phase ("" sums them all) and how many
// there are (the steps of PhaseSteps count each step).
func (tl *Timeline) Total(phase Phase) (d time.Duration, n int) {
	for _, e := range tl.Events {
		if phase == "" || e.Phase == phase {
			d += e.Duration
			if e.Phase == PhaseSteps {
				n += e.Count
			} else {
				n++
			}
		}
	}
	return d, n
}

// Short is the timeline in one line, in a user's words, as the notebooks print it after a
// run: "start 0.6 s · build 0.3 s · compile 3.9 s · 300 steps 2.5 s · eval 0.4 s". Parts that did
// not happen are left out; "build", "compile" and "loaded" (from the compile cache) add up those
// of every program, "eval" the validations and the final evaluation, "300 steps" the first step
// and the rest.
func (tl *Timeline) Short() string {
	if tl == nil {
		return ""
	}
	var parts []string
	add := func(label string, d time.Duration) { parts = append(parts, label+" "+seconds(d)) }
	if d, n := tl.Total(PhaseStart); n > 0 {
		b, _ := tl.Total(PhaseBackend)
		dd, _ := tl.Total(PhaseData)
		add("start", d+b+dd)
	}
	if d, n := tl.Total(PhaseBuild); n > 0 {
		add("build", d)
	}
	if d, n := tl.Total(PhaseCompile); n > 0 {
		add("compile", d)
	}
	if d, n := tl.Total(PhaseLoad); n > 0 {
		add("loaded", d)
	}
	first, n1 := tl.Total(PhaseFirstStep)
	rest, n := tl.Total(PhaseSteps)
	if n+n1 > 0 {
		add(fmt.Sprintf("%d %s", n+n1, plural(n+n1, "step")), first+rest)
	}
	v, nv := tl.Total(PhaseValidation)
	e, ne := tl.Total(PhaseEval)
	if nv+ne > 0 {
		add("eval", v+e)
	}
	if d, n := tl.Total(PhaseCheckpoint); n > 0 {
		add(fmt.Sprintf("%d %s", n, plural(n, "checkpoint")), d)
	}
	return strings.Join(parts, " · ")
}

// String is the whole timeline in one line, each event in order, e.g. "start 0.50 s · backend
// 0.00 s · data 0.00 s · build train step 0.30 s · compile train step 3.60 s · first step 0.02 s ·
// 299 steps 2.48 s · build evaluation (validation) 0.05 s · loaded evaluation from the cache
// (validation) 0.01 s · 5 validations 0.30 s · eval 0.10 s · checkpoint 0.01 s". Validations and
// checkpoint writes are added up; builds, compiles and loads are listed one by one.
func (tl *Timeline) String() string {
	if tl == nil {
		return ""
	}
	var parts []string
	seen := map[Phase]bool{}
	for _, e := range tl.Events {
		switch e.Phase {
		case PhaseValidation, PhaseCheckpoint:
			if seen[e.Phase] {
				continue
			}
			seen[e.Phase] = true
			d, n := tl.Total(e.Phase)
			parts = append(parts, fmt.Sprintf("%d %s %s", n, plural(n, string(e.Phase)), precise(d)))
		default:
			parts = append(parts, e.String())
		}
	}
	return strings.Join(parts, " · ")
}

// seconds formats d for Short: "3.9 s", or "0.04 s" below a tenth of a second.
func seconds(d time.Duration) string {
	if d < 100*time.Millisecond {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// precise formats d for String: "3.90 s".
func precise(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// plural returns word for n == 1, else word+"s".
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
