package nb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"

	"github.com/stretchr/testify/require"
)

// TestLabRunsAndCompare: the runs a lab trains (and the one the guard stops) are its Runs
// table, and Compare overlays their curves.
func TestLabRunsAndCompare(t *testing.T) {
	buf := captureOutput(t)
	backend, err := backends.New(backends.Go)
	require.NoError(t, err)
	t.Setenv(RunsEnv, "")
	l, err := New(data.CIFAR100(data.LabelsFine), backend, t.TempDir())
	require.NoError(t, err)
	empty, err := l.Runs()
	require.NoError(t, err)
	require.Empty(t, empty, "no runs folder yet: an empty table")

	cfg := training.Config{Steps: 4, BatchSize: 16, Seed: 1, EvalEvery: 2, EvalExamples: 50}
	fixed, err := l.Fit("b-fixed", cfg)
	require.NoError(t, err)
	_, err = l.Fit("c-guarded", training.Config{Head: 10, Steps: 4, BatchSize: 16})
	require.ErrorIs(t, err, cifarlib.ErrHeadMismatch)
	unguarded, err := l.Fit("a-unguarded", training.Config{Head: 10, Unguarded: true, Steps: 4, BatchSize: 16, Seed: 1, EvalEvery: training.EvalOff})
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(l.RunsDir, "d-notes"), 0o755))

	runs, err := l.Runs()
	require.NoError(t, err)
	var rows []string
	for _, r := range runs {
		rows = append(rows, r.Name+" "+string(r.Status))
	}
	require.Equal(t, []string{"a-unguarded done", "b-fixed done", "c-guarded failed", "d-notes foreign"}, rows)
	require.Equal(t, fixed.Eval.Accuracy, runs[1].TestAccuracy)
	require.Equal(t, unguarded.Loss, runs[0].Loss)
	require.Contains(t, runs[2].Reason, "model head has 10 outputs but dataset cifar100 has 100 classes")

	buf.Reset()
	Show(runs) // outside a notebook: the text table
	require.Equal(t, runs.String()+"\n", buf.String())

	_, err = Select(runs, "b-fixed", "e-missing")
	require.EqualError(t, err, `nb: no run "e-missing" in the runs folder (it has ["a-unguarded" "b-fixed" "c-guarded" "d-notes"]): run the cell that trains it first`)
	chosen, err := Select(runs, "a-unguarded", "b-fixed", "c-guarded")
	require.NoError(t, err)
	require.Equal(t, []string{"a-unguarded", "b-fixed", "c-guarded"}, []string{chosen[0].Name, chosen[1].Name, chosen[2].Name})

	buf.Reset()
	Compare(chosen...)
	require.Regexp(t, `^a-unguarded: 4 points, to step 4, last loss \d\.\d{4}\nb-fixed: 4 points, to step 4, last loss \d\.\d{4}\n`+
		`c-guarded: no curves \(failed: model head has 10 outputs.*\nby head and guard: a-unguarded: head 10, unguarded; b-fixed: head 100, guarded\n`, buf.String())
	shown := buf.String()
	buf.Reset()
	require.NoError(t, l.Compare("a-unguarded", "b-fixed", "c-guarded"), "the cell's one line")
	require.Equal(t, shown, buf.String())
	require.ErrorContains(t, l.Compare("a-unguarded", "e-missing"), `nb: no run "e-missing" in the runs folder`)
	caption := "data: SYNTHETIC cifar100 (generated images, not real accuracy) · machine: go (pure Go, CPU), 1 device"
	require.True(t, strings.HasSuffix(buf.String(), "\n"+caption+"\naccuracy of the 3 runs above\n"+caption+"\n"), buf.String())

	loss, err := CompareLossChart(chosen...)
	require.NoError(t, err)
	doc, err := SVG(loss)
	require.NoError(t, err)
	// The runs are named by what differs between them (their run.json's settings), not by folder.
	requireSVG(t, doc, "training loss (smoothed), by head and guard", ">head 10, unguarded<", ">head 100, guarded<")
	require.NotContains(t, doc, "c-guarded", "a run without curves has no legend entry")
	require.NotContains(t, doc, ">a-unguarded<")
	require.Contains(t, doc, "stroke-dasharray", "the second run is dashed")
	acc, err := CompareAccuracyChart(chosen...)
	require.NoError(t, err)
	doc, err = SVG(acc)
	require.NoError(t, err)
	requireSVG(t, doc, "validation accuracy, by head and guard", ">head 100, guarded<", ">validation:<", ">50 test images, no TTA<")
	require.NotContains(t, doc, "unguarded", "a run without evaluations has no validation curve")
	acc, err = CompareAccuracyChart(chosen[0]) // no evaluations: the training accuracy, smoothed
	require.NoError(t, err)
	doc, err = SVG(acc)
	require.NoError(t, err)
	requireSVG(t, doc, "training accuracy (smoothed), by run", ">a-unguarded<") // alone: by its folder
}
