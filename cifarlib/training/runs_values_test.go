package training

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/stretchr/testify/require"
)

// valuesFixture is the runs package's fixture of a run.json's settings (the default settings,
// as this table writes them, the data folder left empty): its comparisons name settings in the
// table's order and words, and leave the bookkeeping out.
var valuesFixture = filepath.Join("..", "runs", "testdata", "values.json")

// TestRunRecordSettingsOnce: run.json records the settings once (runs.Record.Settings): every
// row of the table, resolved, in its order, with its words and whether it is bookkeeping, and
// what the run was given; nothing else of the record says a setting. They are the Settings value:
// read back through the table they are the run's settings, those its checkpoint records. A run of
// Lab.Fit (no params given) is told apart from another by them. The runs package's fixture is
// what the table writes (CIFARLAB_UPDATE_FIXTURES=1 writes it again).
func TestRunRecordSettingsOnce(t *testing.T) {
	dir := t.TempDir()
	_, err := trainRun(t, dir, "a", func(c *testRun) {
		c.Run.LabelSmoothing, c.Record.Params = 0.2, map[string]string{"label-smoothing": "0.2"}
	})
	require.NoError(t, err)
	_, err = trainRun(t, dir, "b", func(c *testRun) { c.Run.LabelSmoothing = 0.1 })
	require.NoError(t, err)
	rec, err := runs.ReadRecord(filepath.Join(dir, "a"))
	require.NoError(t, err)
	require.Equal(t, runs.RecordFormat, rec.Format)
	require.Len(t, rec.Settings.Values, len(Fields()), "every setting")
	for i, v := range rec.Settings.Values {
		f := Fields()[i]
		require.Equal(t, []any{f.Name, f.Label, f.Bookkeeping}, []any{v.Name, v.Words, v.Bookkeeping}, "in the table's order")
	}
	require.Equal(t, map[string]string{"label-smoothing": "0.2"}, rec.Settings.Given)
	raw, err := os.ReadFile(filepath.Join(dir, "a", runs.FileName))
	require.NoError(t, err)
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &doc))
	for _, old := range []string{"dataset", "model", "head", "guarded", "devices", "batch_size", "target_step", "precision", "recipe", "from", "params", "values"} {
		require.NotContains(t, doc, old, "run.json says the settings once, in settings")
	}

	ld, err := LoadCheckpoint(filepath.Join(dir, "a"), labtest.Backend(t))
	require.NoError(t, err)
	require.Equal(t, ld.Info.Settings, settingsOfRecord(t, rec.Settings), "the checkpoint's settings, read back through the table")

	list := []runs.Info{runs.Read(filepath.Join(dir, "a")), runs.Read(filepath.Join(dir, "b"))}
	require.Equal(t, []string{"label smoothing 0.2", "label smoothing 0.1"}, runs.Labels(list...))

	d := Defaults()
	d.Data.Dir = "" // the machine's
	want, err := json.MarshalIndent(runSettings(&d).Values, "", "  ")
	require.NoError(t, err)
	want = append(want, '\n')
	if os.Getenv("CIFARLAB_UPDATE_FIXTURES") == "1" {
		require.NoError(t, os.WriteFile(valuesFixture, want, 0o644))
	}
	got, err := os.ReadFile(valuesFixture)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "the runs package's fixture: run this test with CIFARLAB_UPDATE_FIXTURES=1")
}

// settingsOfRecord reads the settings a run.json records back into Settings, through the table
// (each row's Set, in table order; the length in steps and in epochs, which a resolved run has
// both of, as the fields are), and what it was given.
func settingsOfRecord(t *testing.T, rs runs.RunSettings) Settings {
	t.Helper()
	var s Settings
	for _, f := range fields {
		v, ok := rs.Value(f.Name)
		require.True(t, ok, f.Name)
		if slices.Contains([]string{"steps", "epochs"}, f.Name) {
			require.NoError(t, parseValue(settingsField(&s, f.Path), v), f.Name)
			continue
		}
		require.NoError(t, f.Set(&s, v), "%s=%s", f.Name, v)
	}
	s.Record.Params = rs.Given
	return s
}
