package runs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestListMarksChanceLevel: a run whose test accuracy lies within the noise of 1/classes
// (ChanceBand) is marked in the runs table, in its JSON and in the table's note; a run that
// learned something is not, nor is one without a final evaluation.
func TestListMarksChanceLevel(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, accuracy float64, examples int) {
		t.Helper()
		result := map[string]any{"end_step": 4, "loss": 2.3, "backend": "go"}
		if examples > 0 {
			perClass := make([]map[string]any, 10)
			result["eval"] = map[string]any{"accuracy": accuracy, "examples": examples, "per_class": perClass}
		}
		raw, err := json.Marshal(result)
		require.NoError(t, err)
		rec := &Record{Status: RunDone, Started: time.Now(), Result: raw}
		rec.Settings.Values = recorded(name, map[string]string{"model": "airbench94", "batch": "1024", "steps": "4"}).Values
		require.NoError(t, os.MkdirAll(filepath.Join(dir, name), 0o755))
		require.NoError(t, rec.Write(filepath.Join(dir, name)))
	}
	write("chance", 0.099, 10000)  // the researcher's 1-epoch airbench94 run
	write("learned", 0.611, 10000) // 2 epochs
	write("small-test", 0.125, 1000)
	write("no-eval", 0, 0)

	table, err := List(dir)
	require.NoError(t, err)
	marked := map[string]bool{}
	for _, r := range table {
		marked[r.Name] = r.ChanceLevel
	}
	require.Equal(t, map[string]bool{"chance": true, "learned": false, "small-test": true, "no-eval": false}, marked)

	chance, _ := table.Find("chance")
	require.Equal(t, "test accuracy at chance level (1/10 = 10.00% ± 0.90 points on 10000 test images): the run learned nothing", chance.Reason)
	text := table.String()
	line := func(name string) string {
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, name+" ") {
				return strings.Join(strings.Fields(l), " ")
			}
		}
		return ""
	}
	require.Contains(t, line("chance"), " 9.90% (chance) ")
	require.Contains(t, line("chance"), "the run learned nothing")
	require.Contains(t, line("learned"), " 61.10%")
	require.NotContains(t, line("learned"), "chance")
	require.Contains(t, line("small-test"), "12.50% (chance)")
	require.Contains(t, line("small-test"), "(1/10 = 10.00% ± 2.85 points on 1000 test images)")
}
