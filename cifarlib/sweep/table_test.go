package sweep

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/stretchr/testify/require"
)

// writeDoneRun writes the run.json of a done run with its final test accuracy and loss.
func writeDoneRun(t *testing.T, dir string, params map[string]string, accuracy, loss float64) {
	t.Helper()
	result, err := json.Marshal(map[string]any{"end_step": 10, "loss": loss, "eval": map[string]any{"accuracy": accuracy}})
	require.NoError(t, err)
	data, err := json.Marshal(runs.Record{Format: runs.RecordFormat, Status: runs.RunDone, Settings: runs.RunSettings{Given: params}, Result: result})
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, runs.FileName), data, 0o644))
}

// The table groups the runs by lr, averaging over the seeds: exact means and sample standard
// deviations, best group first; an unfinished run counts in its group's runs, not its means.
func TestTable(t *testing.T) {
	runs := t.TempDir()
	s, err := Plan(spec(runs, "lr=0.1,0.05", "seed=1,2,3"))
	require.NoError(t, err)
	acc := map[string]float64{"0.1/1": 0.50, "0.1/2": 0.60, "0.1/3": 0.70, "0.05/1": 0.75, "0.05/2": 0.25}
	for i, task := range s.Tasks {
		key := task.Params["lr"] + "/" + task.Params["seed"]
		if a, ok := acc[key]; ok {
			writeDoneRun(t, s.RunDir(i), task.Params, a, 1-a)
		}
	}
	tb := s.Table()
	require.Len(t, tb.Groups, 2)
	g := tb.Groups[0]
	require.Equal(t, []Setting{{"lr", "0.1"}}, g.Settings)
	require.Equal(t, 3, g.Done)
	require.InDelta(t, 0.6, g.Accuracy, 1e-15)
	require.InDelta(t, 0.1, g.AccuracySpread, 1e-15) // sqrt((0.01+0+0.01)/2)
	require.Equal(t, "lr-lr_0.1-seed_3", g.Best)
	g = tb.Groups[1]
	require.Equal(t, 2, g.Done)
	require.Equal(t, []string{"lr-lr_0.05-seed_1", "lr-lr_0.05-seed_2", "lr-lr_0.05-seed_3"}, g.Runs)
	require.InDelta(t, 0.5, g.Accuracy, 1e-15)
	require.InDelta(t, 0.3535533905932738, g.AccuracySpread, 1e-15) // sqrt(2*0.0625/1)
	require.Equal(t, []string{"lr-lr_0.1-seed_3", "lr-lr_0.05-seed_1"}, tb.Best(2))
	require.Equal(t, "sweep lr, averaged over seed\n"+
		"settings  done  test acc (mean ± spread, runs)  loss             best run\n"+
		"lr=0.1    3/3   60.00% ± 10.00 pp (3)           0.4000 ± 0.1000  lr-lr_0.1-seed_3\n"+
		"lr=0.05   2/3   50.00% ± 35.36 pp (2)           0.5000 ± 0.3536  lr-lr_0.05-seed_1\n", tb.String())
	require.Contains(t, tb.HTML(), "<td>lr=0.1</td><td style=\"text-align:right\">3/3</td>")
}
