package training

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/stretchr/testify/require"
)

// timelineConfig is a small run whose evaluations end in partial batches: 40 validation
// examples and 70 test examples, at batch 32.
func timelineConfig(t *testing.T) testRun {
	train, test := labtest.TrainTestRecords(t, data.CIFAR10(), 96, 70, 5)
	return testRun{Settings: with(t, Defaults(), map[string]string{"model": cifarlib.ArchLinear, "steps": "6", "batch": "8", "seed": "3",
		"eval-every": "3", "eval-examples": "40", "eval-batch": "32", "checkpoint-every": "3", "checkpoint": filepath.Join(t.TempDir(), "run")}),
		Env: Env{Train: train, Test: test, Backend: labtest.Backend(t), Progress: ProgressOff}}
}

// checkTimelineEvents checks that tl's events follow one another, within the wall time of the
// run called at called, and returns their phases (and compiled programs): a program compiled,
// or loaded from the compile cache, is "compile PROGRAM"; on an XLA backend its build comes
// first, for the same program and purpose, and is not listed.
func checkTimelineEvents(t *testing.T, tl *runs.Timeline, called time.Time, wall time.Duration) []string {
	var phases []string
	var sum time.Duration
	prevEnd := time.Duration(0)
	for i, e := range tl.Events {
		require.GreaterOrEqual(t, e.Duration, time.Duration(0), "%d: %+v", i, e)
		label := string(e.Phase)
		switch e.Phase {
		case runs.PhaseBuild:
			require.Less(t, i+1, len(tl.Events), "a build is followed by its compile or load")
			next := tl.Events[i+1]
			require.Contains(t, []runs.Phase{runs.PhaseCompile, runs.PhaseLoad}, next.Phase, "%d: %+v then %+v", i, e, next)
			require.Equal(t, [2]string{e.Program, e.For}, [2]string{next.Program, next.For})
		case runs.PhaseCompile, runs.PhaseLoad:
			label = "compile " + e.Program
		}
		if e.Phase != runs.PhaseBuild {
			phases = append(phases, label)
		}
		if e.Phase == runs.PhaseStart {
			require.Zero(t, e.Start)
			require.LessOrEqual(t, tl.Origin.Add(e.End()), called.Add(time.Millisecond))
			prevEnd = e.End()
			continue
		}
		sum += e.Duration
		if e.Phase == runs.PhaseSteps { // spans the steps, recorded when they end
			require.Equal(t, 5, e.Count)
			continue
		}
		require.GreaterOrEqual(t, e.Start, prevEnd, "%d: %+v begins before the event before it ends", i, e)
		prevEnd = e.End()
	}
	require.LessOrEqual(t, sum, wall)
	return phases
}

// prepared is how Timeline.Short says the programs were made ready: "compile" on the pure-Go
// backend; on XLA "build", then "compile" and "loaded" (from the compile cache) when some were.
const prepared = `( · build \d+\.\d+ s)?( · compile \d+\.\d+ s)?( · loaded \d+\.\d+ s)?`

// A real run on the pure-Go backend records its phases in order, each compile once, with
// non-negative durations that add up to at most the wall time of Train; run.json and the
// summary carry them.
func TestTrainTimeline(t *testing.T) {
	cfg := timelineConfig(t)
	called := time.Now()
	res, err := Train(context.Background(), cfg.Settings, cfg.Env)
	wall := time.Since(called)
	require.NoError(t, err)
	tl := res.Timeline
	require.NotNil(t, tl)

	// Compile nothing twice: one train step, one evaluation program for the two validations
	// (40 examples: 32 + 8 padded) and the final evaluation (70: 32 + 32 + 6 padded), and
	// GoMLX's variable initialisation.
	require.Equal(t, 1, tl.Programs(runs.ProgramTrainStep), tl.String())
	require.Equal(t, 1, tl.Programs(runs.ProgramEvaluation), tl.String())
	require.Equal(t, 1, tl.Programs(runs.ProgramInit), tl.String())
	require.Equal(t, 3, tl.Programs(""))

	phases, events := checkTimelineEvents(t, tl, called, wall), len(tl.Events)
	require.Equal(t, []string{"start", "backend", "data", "compile train step", "compile variable initialisation", "first_step",
		"compile evaluation", "validation", "checkpoint", "validation", "checkpoint", "steps", "checkpoint", "eval"}, phases)
	for _, e := range tl.Events {
		if (e.Phase == runs.PhaseCompile || e.Phase == runs.PhaseLoad) && e.Program == runs.ProgramEvaluation {
			require.Equal(t, string(runs.PhaseValidation), e.For)
		}
	}

	rec, err := runs.ReadRecord(cfg.Checkpoint.Dir)
	require.NoError(t, err)
	require.NotNil(t, rec.Timeline)
	require.Equal(t, tl.Events, rec.Timeline.Events)
	var summary bytes.Buffer
	require.NoError(t, res.WriteSummary(&summary))
	require.Contains(t, summary.String(), "timeline: start ")
	require.Regexp(t, `^start \d+\.\d+ s`+prepared+` · 6 steps \d+\.\d+ s · eval \d+\.\d+ s · 3 checkpoints \d+\.\d+ s$`, tl.Short())

	// The trained model evaluates with the run's evaluation program: nothing compiles.
	ev, err := res.Evaluate(context.Background(), cfg.Test, EvalOptions{BatchSize: 32})
	require.NoError(t, err)
	require.Zero(t, ev.Timeline.Programs(""), ev.Timeline.String())
	require.Equal(t, res.Eval.Confusion, ev.Confusion)
	require.Len(t, tl.Events, events, "the run's timeline is left alone")
}

// An evaluation of a split whose size is not a multiple of the batch compiles one program;
// a standalone Evaluate records its own timeline.
func TestEvaluateTimeline(t *testing.T) {
	cfg := timelineConfig(t)
	cfg.Eval.SkipFinal, cfg.Eval.Every, cfg.Checkpoint.Dir = true, EvalOff, ""
	res, err := Train(context.Background(), cfg.Settings, cfg.Env)
	require.NoError(t, err)
	require.Zero(t, res.Timeline.Programs(runs.ProgramEvaluation))
	ev, err := res.Evaluate(context.Background(), cfg.Test, EvalOptions{BatchSize: 32})
	require.NoError(t, err)
	require.Equal(t, 70, ev.Examples)
	require.NotNil(t, ev.Timeline)
	require.Equal(t, 1, ev.Timeline.Programs(""), ev.Timeline.String())
	require.Equal(t, 1, ev.Timeline.Programs(runs.ProgramEvaluation))
	var last runs.Event
	for _, e := range ev.Timeline.Events {
		last = e
	}
	require.Equal(t, runs.PhaseEval, last.Phase)
	require.Equal(t, 70, last.Count)
	require.Regexp(t, `^start \d+\.\d+ s`+prepared+` · eval \d+\.\d+ s$`, ev.Timeline.Short())
}
