package nb

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"

	"github.com/janpfeifer/gonb/gonbui/protocol"
	"github.com/stretchr/testify/require"
)

// fakeNotebook makes this package believe it runs in a GoNB cell (here in the cell's own
// program: no kernel, so no lab process), and records the displays it sends.
func fakeNotebook(t *testing.T) *displays {
	t.Helper()
	saved := cellIO
	t.Cleanup(func() { cellIO = saved })
	d := &displays{}
	cellIO.notebook = func() bool { return true }
	cellIO.send = d.add
	return d
}

// displays records the displays a cell sent: each one's id and text.
type displays struct {
	mu   sync.Mutex
	ids  []string
	text []string
}

func (d *displays) add(m *protocol.DisplayData) {
	d.mu.Lock()
	defer d.mu.Unlock()
	text, _ := m.Data[protocol.MIMETextPlain].(string)
	d.ids, d.text = append(d.ids, m.DisplayID), append(d.text, text)
}

// status returns the texts of the cell's status line (the displays of one id,
// "cifarlab-status-..."), in order.
func (d *displays) status() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for i, id := range d.ids {
		if strings.HasPrefix(id, "cifarlab-status-") {
			out = append(out, d.text[i])
		}
	}
	return out
}

// TestCellEvaluation: in a notebook cell, Fit and an evaluation say what they are doing on a
// status line replaced in place (one display), from their first event; the evaluation is kept
// in the run folder, so the same evaluation again returns it at once and says so, while another
// TTA level or split evaluates again, and a run trained again is evaluated again.
func TestCellEvaluation(t *testing.T) {
	buf := captureOutput(t)
	backend, err := backends.New(backends.Go)
	require.NoError(t, err)
	t.Setenv(RunsEnv, "")
	l, err := New(data.CIFAR10(), backend, t.TempDir())
	require.NoError(t, err)
	shown := fakeNotebook(t)

	cfg := settingsOf(t, l, map[string]string{"steps": "4", "batch": "16", "seed": "1", "eval-every": "-1", "no-eval": "true"})
	res, err := l.Fit("eval", cfg)
	require.NoError(t, err)
	lines := shown.status()
	require.NotEmpty(t, lines)
	require.Equal(t, `run "eval": compiling the train step (first time for this shape)…`, strings.TrimRight(strings.SplitAfter(lines[0], "…")[0], " "))
	require.Contains(t, lines, `run "eval": step 1/4 running… 0.0 s`, "after the compiles, the first step")
	// What ended, in the timeline's figures: the compiles, the checkpoint, then the programs.
	var compiles []string
	for _, e := range res.Timeline.Events {
		if e.Phase == runs.PhaseCompile {
			compiles = append(compiles, e.String())
		}
		if e.Phase == runs.PhaseCompile && e.Program == runs.ProgramTrainStep {
			require.Contains(t, lines, fmt.Sprintf(`run "eval": compiled the train step (first time for this shape) in %.2f s`, e.Duration.Seconds()))
		}
	}
	require.Len(t, compiles, 2, res.Timeline.String())
	checkpoint, _ := res.Timeline.Total(runs.PhaseCheckpoint)
	require.Equal(t, fmt.Sprintf(`run "eval": saved the checkpoint at step 4 in %.2f s`, checkpoint.Seconds())+"\n"+
		`run "eval": programs: `+strings.Join(compiles, " · "), lines[len(lines)-1])
	ids := map[string]bool{}
	for _, id := range shown.ids {
		if strings.HasPrefix(id, "cifarlab-status-") {
			ids[id] = true
		}
	}
	require.Len(t, ids, 1, "one line, replaced in place")

	run, err := l.Load("eval")
	require.NoError(t, err)
	opts := training.EvalOptions{MaxExamples: 300}
	before := len(shown.status())
	first, err := run.Evaluate(context.Background(), l.Test, opts)
	require.NoError(t, err)
	evalLines := shown.status()[before:]
	require.Equal(t, `run "eval": evaluating 300 images… 0/300 · 0.0 s`, evalLines[0])
	require.Equal(t, fmt.Sprintf(`run "eval": evaluated 300 images in %.2f s`, first.Timeline.Events[2].Duration.Seconds())+"\n"+
		`run "eval": programs: `+first.Timeline.Events[1].String(), evalLines[len(evalLines)-1], first.Timeline.String())
	require.FileExists(t, filepath.Join(l.RunsDir, "eval", training.EvaluationsFile))
	require.NotContains(t, buf.String(), "not evaluated again")

	// The same evaluation again, here or in a later cell's program (a new Load): the stored one.
	for _, r := range []*training.LoadedCheckpoint{run, Must(l.Load("eval"))} {
		before = len(shown.status())
		buf.Reset()
		again, err := r.Evaluate(context.Background(), l.Test, opts)
		require.NoError(t, err)
		require.Equal(t, first.Confusion, again.Confusion)
		require.Equal(t, first.Loss, again.Loss)
		require.Len(t, shown.status(), before, "nothing evaluated: no status line")
		require.Regexp(t, `run "eval": test accuracy [0-9.]+% \(\d+/300\), loss [0-9.]+ \[SYNTHETIC cifar10.*\]: stored in .*/runs/eval/evaluations.json `+
			`when the same weights \(step 4\), images and options were evaluated \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d, in \d+\.\d s\); not evaluated again\n`, buf.String())
	}

	checkEvaluatedAnew(t, l, run, cfg, buf, shown)
}

// checkEvaluatedAnew checks that another TTA level or split than the stored evaluations' is
// evaluated, and kept too, and that the run trained again (with cfg) is evaluated again: the
// output of l's cells in buf, their displays in shown.
func checkEvaluatedAnew(t *testing.T, l *Lab, run *training.LoadedCheckpoint, cfg training.Settings, buf *bytes.Buffer, shown *displays) {
	opts := training.EvalOptions{MaxExamples: 300}
	// Another TTA level, another split: evaluated, and kept too.
	buf.Reset()
	tta, err := run.Evaluate(context.Background(), l.Test, training.EvalOptions{MaxExamples: 300, TTA: training.TTAMirror})
	require.NoError(t, err)
	require.Equal(t, training.TTAMirror, tta.TTA)
	train, err := run.Evaluate(context.Background(), l.Train, training.EvalOptions{MaxExamples: 300, Split: "train"})
	require.NoError(t, err)
	require.Equal(t, "train", train.Split)
	require.NotContains(t, buf.String(), "not evaluated again")
	require.Contains(t, shown.status()[len(shown.status())-1], "evaluated 300 images of the train split in ")

	// Trained again: Fit starts the run's folder afresh, its evaluations with it.
	_, err = l.Fit("eval", cfg)
	require.NoError(t, err)
	buf.Reset()
	_, err = Must(l.Load("eval")).Evaluate(context.Background(), l.Test, opts)
	require.NoError(t, err)
	require.NotContains(t, buf.String(), "not evaluated again")
	_, err = os.Stat(filepath.Join(l.RunsDir, "eval", training.EvaluationsFile))
	require.NoError(t, err, "kept again")
}
