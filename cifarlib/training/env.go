package training

import (
	"io"
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
