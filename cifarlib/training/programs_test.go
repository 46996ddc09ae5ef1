package training

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/stretchr/testify/require"
)

// A second Train with the same ProgramKey in the same process compiles nothing, and trains
// exactly as a fresh run does; a run with another batch size compiles its own programs.
func TestProgramsReused(t *testing.T) {
	cfg := timelineConfig(t)
	dir := t.TempDir()
	runIn := func(name string, p *Programs, edit func(*testRun)) (*Result, map[string][]byte) {
		t.Helper()
		c := cfg
		c.Checkpoint.Dir, c.Programs = filepath.Join(dir, name), p
		if edit != nil {
			edit(&c)
		}
		res, err := Train(context.Background(), c.Settings, c.Env)
		require.NoError(t, err)
		return res, trainVars(t, res.Store)
	}
	fresh, freshVars := runIn("fresh", nil, nil)

	p := &Programs{}
	first, firstVars := runIn("first", p, nil)
	require.Equal(t, 1, first.Timeline.Programs(runs.ProgramTrainStep))
	require.Equal(t, 1, p.Len())
	require.Equal(t, freshVars, firstVars)

	cell := time.Now() // as a lab process gives the start of the cell it trains for
	second, secondVars := runIn("second", p, func(c *testRun) { c.Clock = cell })
	require.Zero(t, second.Timeline.Programs(""), second.Timeline.String())
	require.Equal(t, runs.CallerFrom, second.Timeline.OriginFrom)
	require.Equal(t, cell, second.Timeline.Origin)
	require.Equal(t, runs.PhaseStart, second.Timeline.Events[0].Phase)
	require.LessOrEqual(t, second.Timeline.Events[0].Duration, time.Since(cell))
	require.NotSame(t, first.Store, second.Store, "the first run's model keeps its weights")
	require.Equal(t, firstVars, trainVars(t, first.Store))
	ev, err := first.Evaluate(context.Background(), cfg.Test, EvalOptions{BatchSize: cfg.Eval.BatchSize})
	require.NoError(t, err)
	require.Equal(t, first.Eval.Confusion, ev.Confusion)
	require.Equal(t, freshVars, secondVars, "the same training, bit for bit")
	require.Equal(t, fresh.Loss, second.Loss)
	require.Equal(t, fresh.Eval.Loss, second.Eval.Loss)
	require.Equal(t, fresh.Eval.Confusion, second.Eval.Confusion)
	require.Equal(t, fresh.History.Points[len(fresh.History.Points)-1].Eval, second.History.Points[len(second.History.Points)-1].Eval)
	require.Equal(t, 1, p.Len())

	other, _ := runIn("batch", p, func(c *testRun) { c.Data.BatchSize = 16 })
	require.Equal(t, 1, other.Timeline.Programs(runs.ProgramTrainStep))
	require.Equal(t, 1, other.Timeline.Programs(runs.ProgramEvaluation))
	require.Equal(t, 2, p.Len())

	// A run resumed from a checkpoint takes its weights from it, with the kept programs.
	resumed, _ := runIn("second", p, func(c *testRun) { c.Run.Steps = 9 })
	require.True(t, resumed.Resumed)
	require.Zero(t, resumed.Timeline.Programs(""), resumed.Timeline.String())
}

// A run interrupted in a process that keeps its programs, and resumed there, compiles nothing:
// its checkpoint's values go into the kept Store. It trains as a resume that compiles its own
// programs does, bit for bit, and as the run never interrupted.
func TestProgramsResumedRunReusesThem(t *testing.T) {
	cfg := timelineConfig(t)
	cfg.Run.Steps = 8
	dir := t.TempDir()
	train := func(name string, p *Programs, stopAt int) *Result {
		t.Helper()
		c := cfg
		c.Checkpoint.Dir, c.Programs = filepath.Join(dir, name), p
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c.OnPoint = func(pt runs.HistoryPoint) error {
			if pt.Step == stopAt {
				cancel() // as SIGINT does
			}
			return nil
		}
		res, err := Train(ctx, c.Settings, c.Env)
		require.NoError(t, err)
		return res
	}
	straight := train("straight", nil, 0)
	p := &Programs{}
	first := train("kept", p, 3)
	require.True(t, first.Interrupted)
	require.Equal(t, 1, p.Len(), "the interrupted run's programs are kept")
	require.NoError(t, os.CopyFS(filepath.Join(dir, "own"), os.DirFS(filepath.Join(dir, "kept"))))

	kept := train("kept", p, 0)
	require.True(t, kept.Resumed)
	require.Equal(t, 3, kept.StartStep)
	require.Zero(t, kept.Timeline.Programs(""), kept.Timeline.String())
	own := train("own", nil, 0)
	require.True(t, own.Resumed)
	require.Equal(t, 1, own.Timeline.Programs(runs.ProgramTrainStep), own.Timeline.String())

	want := trainVars(t, own.Store)
	require.Equal(t, want, trainVars(t, kept.Store), "the same training, bit for bit")
	require.Equal(t, want, trainVars(t, straight.Store), "as the run never interrupted")
	for _, r := range []*Result{kept, straight} {
		require.Equal(t, own.Loss, r.Loss)
		require.Equal(t, []float64{own.MovingLoss, own.Accuracy}, []float64{r.MovingLoss, r.Accuracy})
		require.Equal(t, own.Eval.Confusion, r.Eval.Confusion)
		require.Equal(t, own.History.Points, r.History.Points)
	}
}

// Evaluating checkpoints of two runs of one architecture with Programs compiles the
// evaluation program once; each result equals the checkpoint's own evaluation.
func TestProgramsEvaluate(t *testing.T) {
	cfg := timelineConfig(t)
	cfg.Eval.Every, cfg.Eval.SkipFinal = EvalOff, true
	dir := t.TempDir()
	var cks []*LoadedCheckpoint
	for _, seed := range []int64{1, 2} {
		c := cfg
		c.Run.Seed, c.Checkpoint.Dir = seed, filepath.Join(dir, fmt.Sprint(seed))
		_, err := Train(context.Background(), c.Settings, c.Env)
		require.NoError(t, err)
		ck, err := LoadCheckpoint(c.Checkpoint.Dir, cfg.Backend)
		require.NoError(t, err)
		cks = append(cks, ck)
	}
	ctx, opts := context.Background(), EvalOptions{BatchSize: 32}
	p := &Programs{}

	// The first: Programs first (its weights read from the lazily loaded checkpoint), then its own.
	kept, err := p.Evaluate(ctx, cks[0].Trained, cfg.Test, opts)
	require.NoError(t, err)
	require.Equal(t, 1, kept.Timeline.Programs(runs.ProgramEvaluation))
	own, err := cks[0].Evaluate(ctx, cfg.Test, opts)
	require.NoError(t, err)
	require.Equal(t, own.Confusion, kept.Confusion)
	require.Equal(t, own.Loss, kept.Loss)

	// The second: its own first, then with the kept program: nothing compiles.
	own, err = cks[1].Evaluate(ctx, cfg.Test, opts)
	require.NoError(t, err)
	kept, err = p.Evaluate(ctx, cks[1].Trained, cfg.Test, opts)
	require.NoError(t, err)
	require.Zero(t, kept.Timeline.Programs(""), kept.Timeline.String())
	require.Equal(t, own.Confusion, kept.Confusion)
	require.Equal(t, own.Loss, kept.Loss)
	require.NotEqual(t, trainVars(t, cks[0].Store), trainVars(t, cks[1].Store), "two different models")
}
