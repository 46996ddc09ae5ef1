package nb

import (
	"context"
	"fmt"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// fit is Fit in this program, until ctx ends: the run's folder is locked while it trains
// (lockRun), so that two kernels, or a kernel and its lab process, never write it at once.
func (l *Lab) fit(ctx context.Context, name string, s training.Settings, env training.Env) (*training.Result, error) {
	dir, err := l.RunDir(name)
	if err != nil {
		return nil, err
	}
	unlock, err := l.lockRun(name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s, env = l.runOf(s, env)
	env.Warn = func(w string) { fmt.Fprintf(output(), "WARNING: run %q: %s\n", name, w) } // before it trains
	step, resume := interruptedRun(dir)
	if !resume {
		if err := removeRun(name, dir); err != nil {
			return nil, err
		}
	}
	s.Checkpoint.Dir = dir
	var live *Live
	if InNotebook() && !env.Plot {
		live = liveFor(&s, &env)
	}
	start := time.Now()
	if resume && env.Log == nil { // else Train says it
		fmt.Fprintf(output(), "run %q: resuming from step %d, where it was interrupted\n", name, step)
	}
	res, err := training.Train(ctx, s, env)
	if note, again := restartNote(name, err); resume && again {
		fmt.Fprint(output(), note)
		if err := removeRun(name, dir); err != nil {
			return nil, err
		}
		res, err = training.Train(ctx, s, env)
	}
	return l.fitted(name, dir, s, env, live, start, res, err)
}

// runOf is the run of s and env in the lab: its data (dataset and folder) the lab's, its
// backend and splits the lab's unless env gives them, no progress bar unless asked for, log
// lines to Output when s asks for them.
func (l *Lab) runOf(s training.Settings, env training.Env) (training.Settings, training.Env) {
	s.Data.Spec, s.Data.Dir = l.Spec, l.DataDir
	if env.Train == nil && env.Test == nil {
		env.Train, env.Test = l.Train, l.Test
	}
	if env.Backend == nil {
		env.Backend = l.Backend
	}
	if env.Progress != training.ProgressOn {
		env.Progress = training.ProgressOff
	}
	if env.Log == nil && s.Record.LogEvery > 0 {
		env.Log = output()
	}
	return s, env
}

// fitted finishes Fit of the run called name in dir: a failed start recorded, the live charts
// finished, an interrupted run's error, the line that says how long it took.
func (l *Lab) fitted(name, dir string, s training.Settings, env training.Env, live *Live, start time.Time,
	res *training.Result, err error) (*training.Result, error) {
	if live != nil {
		finishLive(live, res, err)
	}
	if err != nil {
		_ = training.RecordFailedStart(s, env, err) // Runs lists the attempt, with its error
		return nil, err
	}
	if res.Interrupted {
		return res, interruptedError(name, shownPath(dir), res.EndStep, res.TargetStep)
	}
	fmt.Fprintf(output(), "run %q: trained %d steps in %.1fs (%s), saved in %s\n", name, res.StepsRun(), time.Since(start).Seconds(),
		res.Timeline.Short(), shownPath(dir))
	return res, nil
}

// finishLive draws live's charts a last time: of the run's own History, with its own record of
// its data and machine, when it trained; of the curves up to the failure when it did not (err).
func finishLive(live *Live, res *training.Result, err error) {
	var h *runs.History
	if err == nil {
		live.Source, h = res.Source(), res.History
	}
	if live.Finish(h) && h != nil {
		drawnLive.Store(h, struct{}{})
	}
}

// liveFor returns a live view on the notebook, fed by env's OnPoint (before any hook of the
// caller's), whose caption says the run's data (its training records' Kind) and machine.
func liveFor(s *training.Settings, env *training.Env) *Live {
	live := NewLive(NotebookSink{}, s.TopK())
	devices := max(1, s.Compute.Devices)
	if s.Compute.Devices == backends.DevicesAll && env.Backend != nil {
		devices = env.Backend.NumDevices()
	}
	live.Source = runs.Source{Backend: backends.Name(env.Backend), Devices: devices, Precision: s.Compute.Precision}
	if env.Train != nil {
		live.Source.Data = &data.Provenance{Dataset: s.Data.Spec.ID(), Kind: env.Train.Kind}
	}
	next := env.OnPoint
	env.OnPoint = func(p runs.HistoryPoint) error {
		_ = live.Add(p)
		if next != nil {
			return next(p)
		}
		return nil
	}
	return live
}
