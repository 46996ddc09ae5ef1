package training

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
)

// EventKind is what an Event says a run or an evaluation is doing.
type EventKind string

// The kinds of events, in the order a run meets them.
const (
	// EventBackend: the run creates its backend.
	EventBackend EventKind = "backend"
	// EventData: the run loads its data.
	EventData EventKind = "data"
	// EventCompile: XLA compiles Program (the train step, the evaluation, GoMLX's variable
	// initialisation), for Reason.
	EventCompile EventKind = "compile"
	// EventStepStart: the run starts step Step of Steps, its first (as its loop starts, and
	// again after the compiles GoMLX does at the first step): a status says "step 1/8 running…"
	// until the step ends.
	EventStepStart EventKind = "step_start"
	// EventStep: the run has done Step of Steps, with the loss Loss.
	EventStep EventKind = "step"
	// EventEval: an evaluation (Purpose: runs.PhaseValidation while training, runs.PhaseEval at
	// its end or alone) has done Done of Examples images, at test-time augmentation TTA; sent
	// as it starts (Done 0) and after each batch.
	EventEval EventKind = "eval"
	// EventCheckpoint: the run saves a checkpoint at Step.
	EventCheckpoint EventKind = "checkpoint"
	// EventPhase: a phase of the caller's own, said in Text (e.g. package nb's "starting the
	// lab process").
	EventPhase EventKind = "phase"
	// EventTimed: the run's (or the evaluation's) timeline recorded Timed, a phase that ended,
	// with its duration: the figures a status line gives for what ended (a compile, the steps,
	// an evaluation), the timeline's own.
	EventTimed EventKind = "timed"
)

// ReasonFirst is the Reason of the compile of a program that no earlier run of the process has
// compiled for its shapes.
const ReasonFirst = "first time for this shape"

// Event is what a run or an evaluation starts doing, or has got to: the events of
// Env.OnEvent and EvalOptions.OnEvent, which a notebook cell and the CLI turn into the line
// that says what the work is doing from its first second (Status). An Event travels as JSON
// (a notebook's lab process sends the events of its work to the cell).
type Event struct {
	Kind EventKind `json:"kind"`
	// Program is what an EventCompile compiles (runs.ProgramTrainStep, runs.ProgramEvaluation,
	// runs.ProgramInit; an evaluation's at TTA level TTA, a program of its own), and Reason why:
	// ReasonFirst, or how its shape differs from the programs the process keeps
	// (training.Programs), or why it cannot use them.
	Program string `json:"program,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Cached: the EventCompile's program was loaded from the compile cache, not compiled (sent
	// when the load ended, in the same phase as the EventCompile it follows).
	Cached bool `json:"cached,omitempty"`
	// Step and Steps: the step done, of the last one (EventStep, EventCheckpoint); Loss is
	// the step's training loss (EventStep).
	Step  int     `json:"step,omitempty"`
	Steps int     `json:"steps,omitempty"`
	Loss  float64 `json:"loss,omitempty"`
	// Done and Examples: the images an evaluation has done, of those it evaluates; TTA its
	// test-time augmentation level, Purpose its phase and Split the split (EventEval).
	Done     int        `json:"done,omitempty"`
	Examples int        `json:"examples,omitempty"`
	TTA      int        `json:"tta,omitempty"`
	Purpose  runs.Phase `json:"purpose,omitempty"`
	Split    string     `json:"split,omitempty"`
	// Text says what an EventPhase is.
	Text string `json:"text,omitempty"`
	// Timed is what the timeline recorded (EventTimed).
	Timed *runs.Event `json:"timed,omitempty"`
}

// phase is the part of what e says that stays the same while the work it describes goes on:
// a Status redraws its elapsed time and progress, and says when it ends.
func (e Event) phase() string {
	switch e.Kind {
	case EventCompile:
		return fmt.Sprintf("%s/%s/%d", e.Kind, e.Program, e.TTA)
	case EventStepStart: // the step's phase, which its end continues
		return string(EventStep)
	case EventEval:
		return string(e.Kind) + "/" + string(e.Purpose) + "/" + e.Split
	case EventCheckpoint:
		return fmt.Sprintf("%s/%d", e.Kind, e.Step)
	case EventPhase:
		return string(e.Kind) + "/" + e.Text
	}
	return string(e.Kind)
}

// Line says what e is doing ("compiling the train step (first time for this shape)…",
// "step 1/200 · loss 2.3026", "evaluating 10,000 images with TTA level 2 (6 views)…
// 3,000/10,000"), or, with done, what it did ("compiled the train step", "evaluated 10,000
// images with TTA level 2 (6 views)").
func (e Event) Line(done bool) string {
	verb := func(doing, did string) string {
		if done {
			return did
		}
		return doing
	}
	ellipsis := "…"
	if done {
		ellipsis = ""
	}
	switch e.Kind {
	case EventPhase:
		return e.Text + ellipsis
	case EventBackend:
		return verb("creating the backend", "created the backend") + ellipsis
	case EventData:
		return verb("loading the data", "loaded the data") + ellipsis
	case EventCompile:
		name := programName(e.Program)
		if e.TTA > TTANone {
			name += fmt.Sprintf(" with TTA level %d", e.TTA)
		}
		if e.Cached {
			return verb("loading ", "loaded ") + name + " from the cache" + ellipsis
		}
		s := verb("compiling ", "compiled ") + name
		if e.Reason != "" {
			s += " (" + e.Reason + ")"
		}
		return s + ellipsis
	case EventStepStart:
		return fmt.Sprintf("step %d/%d running", e.Step, e.Steps) + ellipsis
	case EventTimed:
		if e.Timed != nil {
			return e.Timed.String()
		}
	case EventStep:
		return fmt.Sprintf("step %d/%d · loss %.4f", e.Step, e.Steps, e.Loss) // as the run's log lines write steps
	case EventCheckpoint:
		return verb("saving the checkpoint", "saved the checkpoint") + fmt.Sprintf(" at step %d", e.Step) + ellipsis
	case EventEval:
		what := fmt.Sprintf("%s images", cifarlib.FormatCount(e.Examples))
		if e.Split != "" && e.Split != "test" {
			what += " of the " + e.Split + " split"
		}
		if e.TTA > TTANone {
			what += fmt.Sprintf(" with TTA level %d (%d views)", e.TTA, ttaViewCount(e.TTA))
		}
		s := verb("evaluating ", "evaluated ") + what
		if e.Purpose == runs.PhaseValidation {
			s = verb("validating on ", "validated on ") + what
		}
		if done {
			return s
		}
		return s + ellipsis + fmt.Sprintf(" %s/%s", cifarlib.FormatCount(e.Done), cifarlib.FormatCount(e.Examples))
	}
	return string(e.Kind)
}

// programName is how a line names a program: "the train step", "the evaluation", "the variable
// initialisation".
func programName(program string) string {
	if program == "" {
		return "a program"
	}
	return "the " + program
}
