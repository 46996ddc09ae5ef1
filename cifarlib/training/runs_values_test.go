package training

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/stretchr/testify/require"
)

// valuesFixture is the runs package's fixture of a run.json's Values (the default settings, as
// this table writes them): its comparisons name settings in the table's order and words.
var valuesFixture = filepath.Join("..", "runs", "testdata", "values.json")

// TestRunRecordValues: run.json records every setting of the table, resolved, in its order and
// words, but the folders; a run of Lab.Fit (no params given) is told apart from another by
// them. The runs package's fixture is what the table writes (CIFARLAB_UPDATE_FIXTURES=1
// writes it again).
func TestRunRecordValues(t *testing.T) {
	dir := t.TempDir()
	_, err := trainRun(t, dir, "a", func(c *testRun) { c.Run.LabelSmoothing = 0.2 })
	require.NoError(t, err)
	_, err = trainRun(t, dir, "b", func(c *testRun) { c.Run.LabelSmoothing = 0.1 })
	require.NoError(t, err)
	rec, err := runs.ReadRecord(filepath.Join(dir, "a"))
	require.NoError(t, err)
	require.Len(t, rec.Values, len(Fields())-2, "every setting but the folders")
	for i, v := range rec.Values {
		f, err := LookupField(v.Name)
		require.NoError(t, err)
		require.Equal(t, f.Label, v.Words)
		if i > 0 {
			require.Less(t, fieldIndex(rec.Values[i-1].Name), fieldIndex(v.Name), "in the table's order")
		}
	}
	list := []runs.Info{runs.Read(filepath.Join(dir, "a")), runs.Read(filepath.Join(dir, "b"))}
	require.Equal(t, []string{"label smoothing 0.2", "label smoothing 0.1"}, runs.Labels(list...))

	d := Defaults()
	want, err := json.MarshalIndent(settingValues(&d), "", "  ")
	require.NoError(t, err)
	want = append(want, '\n')
	if os.Getenv("CIFARLAB_UPDATE_FIXTURES") == "1" {
		require.NoError(t, os.WriteFile(valuesFixture, want, 0o644))
	}
	got, err := os.ReadFile(valuesFixture)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "the runs package's fixture: run this test with CIFARLAB_UPDATE_FIXTURES=1")
}

// fieldIndex is the place of the setting called name in the table.
func fieldIndex(name string) int {
	for i, f := range fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}
