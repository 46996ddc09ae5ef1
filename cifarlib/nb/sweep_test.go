package nb

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/sweep"
	"github.com/stretchr/testify/require"
)

// TestLabSweep: a sweep over two learning rates and two seeds, its runs trained into the lab's
// runs folder, is a table grouped by learning rate (Show prints it) and CompareBest overlays
// the best run of each group.
func TestLabSweep(t *testing.T) {
	buf := captureOutput(t)
	l := goLab(t, data.CIFAR100(data.LabelsFine))
	base := settingsOf(t, l, map[string]string{"steps": "4", "batch": "16", "eval-examples": "50"})
	base.Record.Params = map[string]string{"steps": "4"}
	lrs, err := sweep.ParseAxis("lr=0.01,0.001")
	require.NoError(t, err)
	seeds, err := sweep.ParseAxis("seed=1,2")
	require.NoError(t, err)
	s, err := sweep.Plan(sweep.Spec{Name: "nb", Runs: l.RunsDir, Grid: []sweep.Axis{lrs, seeds}, Base: base})
	require.NoError(t, err)
	require.NoError(t, s.Save())
	acc := map[string]float64{}
	for i, task := range s.Tasks {
		ts, err := s.TaskSettings(i) // the base with the task's learning rate and seed, its params
		require.NoError(t, err)
		res, err := l.Fit(task.Name, ts)
		require.NoError(t, err)
		acc[task.Name] = res.Eval.Accuracy
	}

	table, err := l.Sweep("nb")
	require.NoError(t, err)
	require.Len(t, table.Groups, 2)
	for _, g := range table.Groups {
		require.Equal(t, 2, g.Done)
		a, b := acc[g.Runs[0]], acc[g.Runs[1]]
		require.InDelta(t, (a+b)/2, g.Accuracy, 1e-15)
		require.Equal(t, map[bool]string{true: g.Runs[0], false: g.Runs[1]}[a >= b], g.Best)
	}
	buf.Reset()
	Show(table)
	require.Equal(t, table.String()+"\n", buf.String())

	buf.Reset()
	require.NoError(t, l.CompareBest(table, 2))
	require.Regexp(t, `^`+table.Groups[0].Best+`: 4 points, to step 4, last loss \d\.\d{4}\n`+table.Groups[1].Best+`: 4 points`, buf.String())

	_, err = l.Sweep("missing")
	require.ErrorContains(t, err, `sweep: no sweep "missing" in `+l.RunsDir)
}

// TestLabRunSweep: one call runs a sweep with the cifarlab command (built here, on PATH) on the
// lab's data and returns its table; a bad flag comes back as cifarlab's message.
func TestLabRunSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the cifarlab binary")
	}
	bin := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "cifarlab"), "../../cmd/cifarlab").CombinedOutput()
	require.NoError(t, err, string(out))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("GOMLX_BACKEND", "go")
	buf := captureOutput(t)
	l := goLab(t, data.CIFAR10())
	table, err := l.RunSweep("one", "--grid", "seed=1,2", "--model", "linear", "--steps", "3", "--batch", "8", "--backend", "go")
	require.NoError(t, err, buf.String())
	require.Len(t, table.Groups, 1)
	require.Equal(t, 2, table.Groups[0].Done)
	require.Equal(t, 2, table.Groups[0].Tested)
	require.Contains(t, buf.String(), "sweep one: 2 tasks done")

	_, err = l.RunSweep("two", "--grid", "sed=1", "--steps", "3")
	require.ErrorContains(t, err, "nb: cifarlab sweep two: exit status 2: cifarlab sweep: sweep: --grid sed names \"sed\", which is not a setting of `cifarlab train`")
}

// goLab is a Lab of spec on the pure-Go backend, with its data (synthesised) and runs in a
// temporary folder.
func goLab(t *testing.T, spec data.Spec) *Lab {
	t.Helper()
	backend, err := backends.New(backends.Go)
	require.NoError(t, err)
	t.Setenv(RunsEnv, "")
	l, err := New(spec, backend, t.TempDir())
	require.NoError(t, err)
	return l
}
