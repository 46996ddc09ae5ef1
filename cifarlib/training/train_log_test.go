package training

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/stretchr/testify/require"
)

// TestTrainNotesSyntheticDataOnce: a run on the synthetic data Prepare wrote says so once, in
// the data's state line (it was said for the training and again for the test split), and its
// data line says synthetic.
func TestTrainNotesSyntheticDataOnce(t *testing.T) {
	root := t.TempDir()
	synthetic, err := data.Prepare(root, data.CIFAR10(), data.SynthOptions{Seed: 1, TrainSize: 64, TestSize: 16})
	require.NoError(t, err)
	require.True(t, synthetic)
	var log bytes.Buffer
	s := with(t, Defaults(), map[string]string{"data": root, "model": cifarlib.ArchLinear, "steps": "1", "batch": "16"})
	_, err = Train(context.Background(), s, Env{Backend: labtest.Backend(t), Progress: ProgressOff, Log: &log})
	require.NoError(t, err)
	note := "SYNTHETIC DATA: no real cifar10 in " + root + ", so generated images stand in (in " + filepath.Join(data.SyntheticDir(root), "cifar-10-batches-bin") + ")"
	require.Equal(t, 1, strings.Count(log.String(), note), log.String())
	require.Contains(t, log.String(), "data: synthetic cifar10, binary layout, 64 train / 16 test images, in "+
		filepath.Join(data.SyntheticDir(root), "cifar-10-batches-bin")+"\n", "the log says the data is synthetic")
}

// TestLogEveryDefault: without LogEvery, a run logs every HistoryEvery steps, less often when
// that would write more than 200 lines.
func TestLogEveryDefault(t *testing.T) {
	for _, c := range []struct{ steps, history, logEvery, want int }{
		{50, 0, 0, 1},
		{200, 0, 0, 1},
		{300, 0, 0, 2}, // 150 lines, not 300
		{1000, 0, 0, 5},
		{1001, 0, 0, 6},
		{300, 10, 0, 10},
		{300, 0, 7, 7},
	} {
		s := Defaults()
		s.Run.Steps, s.Record.HistoryEvery, s.Record.LogEvery = c.steps, c.history, c.logEvery
		cfg, err := resolved(s, 0)
		require.NoError(t, err)
		require.Equal(t, c.want, cfg.Record.LogEvery, "%+v", c)
	}
}

// TestEvalEveryDefault: a run that evaluates validates about defaultEvals times on
// defaultEvalExamples test examples, as Lightning validates while it trains; EvalOff or
// Eval.SkipFinal leave it out; an explicit period keeps its examples (0: all).
func TestEvalEveryDefault(t *testing.T) {
	for _, c := range []struct {
		name                    string
		edit                    map[string]string
		wantEvery, wantExamples int
	}{
		{"default", map[string]string{"steps": "100"}, 20, 500},
		{"rounded up", map[string]string{"steps": "101"}, 21, 500},
		{"short run", map[string]string{"steps": "3"}, 1, 500},
		{"examples given", map[string]string{"steps": "100", "eval-examples": "64"}, 20, 64},
		{"off", map[string]string{"steps": "100", "eval-every": "-1"}, 0, 0},
		{"no evaluation at all", map[string]string{"steps": "100", "no-eval": "true"}, 0, 0},
		{"explicit", map[string]string{"steps": "100", "eval-every": "7", "eval-examples": "0"}, 7, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := resolved(with(t, Defaults(), c.edit), 0)
			require.NoError(t, err)
			require.Equal(t, [2]int{c.wantEvery, c.wantExamples}, [2]int{got.Eval.Every, got.Eval.Examples})
		})
	}

	// A run with the defaults: five evaluations in its history, of the first 40 test examples
	// (all there are, fewer than defaultEvalExamples), and the final one.
	train, test := labtest.TrainTestRecords(t, data.CIFAR10(), 64, 40, 1)
	s := with(t, Defaults(), map[string]string{"model": cifarlib.ArchLinear, "steps": "10", "batch": "16"})
	res, err := Train(context.Background(), s, Env{Train: train, Test: test, Backend: labtest.Backend(t), Progress: ProgressOff})
	require.NoError(t, err)
	var evals []int
	for _, p := range res.History.Points {
		if p.Eval != nil {
			evals = append(evals, p.Step)
			require.Equal(t, 40, p.Eval.Examples)
		}
	}
	require.Equal(t, []int{2, 4, 6, 8, 10}, evals)
	require.NotNil(t, res.Eval)
}
