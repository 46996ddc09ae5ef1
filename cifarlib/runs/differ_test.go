package runs

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/stretchr/testify/require"
)

// recorded is a run of the runs folder /runs whose run.json is rec, as the lab writes it today
// (format 3): every setting of the table (testdata/values.json, the default settings as the
// training package's table writes them, TestRunRecordSettingsOnce) with the values given and
// those a run resolves (the cnn on cifar10, head 10, guarded, 1 device, batch 512, 20 steps),
// unless change changes them. A setting given that the table does not have (a newer lab's) is
// recorded after the others, without words.
func recorded(name string, given map[string]string, change ...func(*Record)) Info {
	var values []Setting
	fixture, err := os.ReadFile(filepath.Join("testdata", "values.json"))
	if err != nil || json.Unmarshal(fixture, &values) != nil {
		panic(fmt.Sprintf("testdata/values.json: %v", err))
	}
	rec := &Record{Format: RecordFormat, Status: RunDone, Settings: RunSettings{Values: values, Given: given}}
	for _, v := range [][2]string{{"head", "10"}, {"batch", "512"}, {"steps", "20"}, {"devices", "1"}} {
		rec.Settings.Set(v[0], v[1])
	}
	for _, n := range slices.Sorted(maps.Keys(given)) {
		rec.Settings.Set(n, given[n])
	}
	for _, c := range change {
		c(rec)
	}
	return Info{Name: name, Dir: "/runs/" + name, Status: rec.Status, Settings: settingsOf(rec), Values: rec.Settings.Values}
}

// set is a change of a recorded run: its setting name's value.
func set(name, value string) func(*Record) { return func(r *Record) { r.Settings.Set(name, value) } }

// recordedBefore is recorded in a run.json of format 1, read as ReadRecord reads it: the fields
// of what was trained (the same), and its params only.
func recordedBefore(name string, params map[string]string, change ...func(*legacyRecord)) Info {
	old := &legacyRecord{Record: Record{Status: RunDone}, Dataset: "cifar10", Model: "cnn", Head: 10, Guarded: true, Devices: 1,
		BatchSize: 512, TargetStep: 20, Params: params}
	for _, c := range change {
		c(old)
	}
	rec := old.upgrade()
	return Info{Name: name, Dir: "/runs/" + name, Status: rec.Status, Settings: settingsOf(rec), Values: rec.Settings.Values}
}

// differCase is a case of TestDiffering: runs, and what a comparison of them names.
type differCase struct {
	name     string
	runs     []Info
	differ   []string
	labels   []string
	compared string
}

// differCases are the cases of TestDiffering: settings from the params, then from the record.
func differCases() []differCase {
	return append(paramCases(), recordCases()...)
}

// paramCases are the cases of TestDiffering whose settings differ in their params.
func paramCases() []differCase {
	return []differCase{
		{"one setting", []Info{recorded("ls02", map[string]string{"label-smoothing": "0.2"}), recorded("ls01", map[string]string{"label-smoothing": "0.1"})},
			[]string{"label-smoothing"}, []string{"label smoothing 0.2", "label smoothing 0.1"}, "label smoothing"},
		{"the same settings: named by their folders", []Info{recorded("a", map[string]string{"seed": "1"}), recorded("b", map[string]string{"seed": "1"})},
			nil, []string{"a", "b"}, "run"},
		{"one run", []Info{recorded("a", nil)}, nil, []string{"a"}, "run"},
		{"no runs", nil, nil, []string{}, "run"},
		{"devices, from the record", []Info{recorded("one", nil, set("devices", "1")), recorded("four", nil, set("devices", "4"))},
			[]string{"devices"}, []string{"1 device", "4 devices"}, "devices"},
		{"two settings of three runs, in the table's order", []Info{
			recorded("a", map[string]string{"lr": "0.1", "seed": "1"}),
			recorded("b", map[string]string{"lr": "0.2", "seed": "1"}),
			recorded("c", map[string]string{"lr": "0.2", "seed": "2"})},
			[]string{"seed", "lr"}, []string{"seed 1, learning rate 0.1", "seed 1, learning rate 0.2", "seed 2, learning rate 0.2"},
			"seed and learning rate"},
		{"three settings", []Info{
			recorded("a", map[string]string{"lr": "0.1", "seed": "1", "momentum": "0.9"}),
			recorded("b", map[string]string{"lr": "0.2", "seed": "2", "momentum": "0.85"})},
			[]string{"seed", "lr", "momentum"}, []string{"seed 1, learning rate 0.1, momentum 0.9", "seed 2, learning rate 0.2, momentum 0.85"},
			"seed, learning rate and momentum"},
		{"a param given to one run only, in format 1", []Info{recordedBefore("a", map[string]string{"seed": "2"}), recordedBefore("b", nil)},
			[]string{"seed"}, []string{"seed 2", "seed default"}, "seed"},
		{"a setting one run was given, today: its default value", []Info{recorded("a", map[string]string{"seed": "2"}), recorded("b", nil)},
			[]string{"seed"}, []string{"seed 2", "seed 0"}, "seed"},
		{"format 1: in words by their names, by name", []Info{
			recordedBefore("a", map[string]string{"lr": "0.1", "seed": "1"}), recordedBefore("b", map[string]string{"lr": "0.2", "seed": "2"})},
			[]string{"lr", "seed"}, []string{"lr 0.1, seed 1", "lr 0.2, seed 2"}, "lr and seed"},
		{"epochs: the steps follow from them", []Info{
			recorded("e2", map[string]string{"epochs": "2"}, set("steps", "20")),
			recorded("e3", map[string]string{"epochs": "3"}, set("steps", "30"))},
			[]string{"epochs"}, []string{"2 epochs", "3 epochs"}, "epochs"},
	}
}

// recordCases are the cases of TestDiffering whose settings come from the record's own fields,
// or that leave settings out.
func recordCases() []differCase {
	return []differCase{
		{"steps alone", []Info{recorded("s1", nil, set("steps", "1")), recorded("s20", nil)},
			[]string{"steps"}, []string{"1 step", "20 steps"}, "steps"},
		{"bookkeeping changes no numbers: the record says which settings are", []Info{
			recorded("a", map[string]string{"log-every": "5", "checkpoint": "/runs/a", "eval-batch": "50"}),
			recorded("b", map[string]string{"log-every": "10", "checkpoint": "/runs/b", "history-every": "3"})},
			nil, []string{"a", "b"}, "run"},
		{"format 1: its bookkeeping, and its flags that were no settings, change no numbers", []Info{
			recordedBefore("a", map[string]string{"log-every": "5", "checkpoint": "/runs/a", "progress": "off", "labels": "fine"}),
			recordedBefore("b", map[string]string{"log-every": "10", "checkpoint": "/runs/b", "json": "true"})},
			nil, []string{"a", "b"}, "run"},
		{"format 1: a param the record resolves, the record's value", []Info{
			recordedBefore("a", map[string]string{"head": "0", "batch": "512"}), recordedBefore("b", map[string]string{"batch": "512"})},
			nil, []string{"a", "b"}, "run"},
		{"a run without a record is left out", []Info{
			{Name: "photos", Status: RunForeign}, recorded("a", map[string]string{"seed": "1"}), recorded("b", map[string]string{"seed": "2"})},
			[]string{"seed"}, []string{"photos", "seed 1", "seed 2"}, "seed"},
		{"a label two runs share: with their folders", []Info{
			recorded("a", map[string]string{"seed": "1"}), recorded("b", map[string]string{"seed": "1"}), recorded("c", map[string]string{"seed": "2"})},
			[]string{"seed"}, []string{"seed 1 (a)", "seed 1 (b)", "seed 2"}, "seed"},
		{"the head and the guard", []Info{
			recorded("fixed", nil, set("dataset", "cifar100"), set("head", "100")),
			recorded("unguarded", nil, set("dataset", "cifar100"), set("guard", "false"))},
			[]string{"head", "guard"}, []string{"head 100, guarded", "head 10, unguarded"}, "head and guard"},
		{"transferred or not", []Info{
			recorded("fresh", nil), recorded("transfer", nil, set("from", "/runs/04-fixed"))},
			[]string{"from"}, []string{"from scratch", "transferred from 04-fixed"}, "transfer source"},
		{"a recipe, precision", []Info{
			recorded("plain", nil), recorded("recipe", nil, set("recipe", "airbench94"), set("precision", "bf16-mixed"))},
			[]string{"recipe", "precision"}, []string{"no recipe, precision f32", "airbench94 recipe, precision bf16-mixed"}, "recipe and precision"},
		{"the data", []Info{
			recorded("synthetic", nil, func(r *Record) { r.Data = &data.Provenance{Kind: data.KindSynthetic, TrainImages: 200} }),
			recorded("real", nil, func(r *Record) { r.Data = &data.Provenance{Kind: data.KindVerified, TrainImages: 20000} })},
			[]string{"data", "train-images"}, []string{"synthetic data, 200 training images", "real verified data, 20,000 training images"},
			"data and training images"},
		{"a setting of a newer lab: after the known ones, in words", []Info{
			recorded("a", map[string]string{"ema-decay": "0.99", "seed": "1"}), recorded("b", map[string]string{"ema-decay": "0.9", "seed": "2"})},
			[]string{"seed", "ema-decay"}, []string{"seed 1, ema decay 0.99", "seed 2, ema decay 0.9"}, "seed and ema decay"},
	}
}

// TestDiffering: a comparison names runs by the settings in which they differ.
func TestDiffering(t *testing.T) {
	for _, c := range differCases() {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.differ, Differing(c.runs...))
			require.Equal(t, c.labels, Labels(c.runs...))
			require.Equal(t, c.compared, Compared(c.runs...))
		})
	}
}

func TestSettingWordsAndValue(t *testing.T) {
	today := []Info{recorded("a", nil)}
	for name, want := range map[string]string{"lr": "learning rate", "label-smoothing": "label smoothing", "batch": "batch size",
		"seed": "seed", "tta": "TTA", "ema-decay": "ema decay", "train-images": "training images"} {
		require.Equal(t, want, SettingWords(today, name), name)
	}
	require.Equal(t, "label smoothing", SettingWords(nil, "label-smoothing"), "not recorded in words: its name with spaces")
	r := recordedBefore("a", map[string]string{"lr": "0.1"}, func(r *legacyRecord) { r.From = "/elsewhere/b" })
	for name, want := range map[string]string{"lr": "0.1", "seed": "default", "from": "/elsewhere/b", "recipe": "none", "guard": "guarded",
		"precision": "f32", "devices": "1", "train-images": "not recorded"} {
		require.Equal(t, want, r.Value(name), name)
	}
	require.Equal(t, "", Info{Name: "photos"}.Value("lr"), "no record: no value")
	require.Equal(t, "lr not recorded", Info{Name: "photos"}.Describe("lr"), "no record: no words for its settings either")
	require.Equal(t, "", r.Describe())
}

// TestTableSettingColumns: the runs table has a column for each setting in which its runs
// differ, but those it always shows, and none when they agree; a run without a record has
// empty cells there.
func TestTableSettingColumns(t *testing.T) {
	seed := func(s string) map[string]string { return map[string]string{"seed": s, "lr": "0.1"} }
	for _, c := range []struct {
		name    string
		table   Table
		header  string
		rows    []string
		columns []string
	}{
		{"seed and learning rate", Table{recorded("a", seed("1")), recorded("b", map[string]string{"seed": "2", "lr": "0.05"}), {Name: "photos", Status: RunForeign}},
			"run status dataset data model head guard devices seed learning rate steps loss test acc wall time from note",
			[]string{"a done cifar10 cnn 10 guarded 1 1 0.1", "b done cifar10 cnn 10 guarded 1 2 0.05", "photos foreign"},
			[]string{"seed", "lr"}},
		{"all equal: no setting columns", Table{recorded("a", seed("1")), recorded("b", seed("1"))},
			"run status dataset data model head guard devices steps loss test acc wall time from note",
			[]string{"a done cifar10 cnn 10 guarded 1", "b done cifar10 cnn 10 guarded 1"}, nil},
		{"columns the table always has are not repeated", Table{recorded("a", nil), recorded("b", nil, set("devices", "4"), set("batch", "256"))},
			"run status dataset data model head guard devices batch size steps loss test acc wall time from note",
			[]string{"a done cifar10 cnn 10 guarded 1 512", "b done cifar10 cnn 10 guarded 1 256"}, []string{"batch"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i := range c.table {
				if c.table[i].Settings != nil { // what Read fills in from the same record
					c.table[i].Dataset, c.table[i].Model, c.table[i].Head, c.table[i].Guarded, c.table[i].Devices = "cifar10", "cnn", 10, true, 1
				}
			}
			require.Equal(t, c.columns, c.table.settingColumns())
			lines := strings.Split(strings.TrimSuffix(c.table.String(), "\n"), "\n")
			require.Equal(t, c.header, strings.Join(strings.Fields(lines[0]), " "))
			for i, want := range c.rows {
				require.Equal(t, want, strings.Join(strings.Fields(lines[1+i]), " "))
			}
			html := c.table.HTML()
			for _, name := range c.columns {
				require.Contains(t, html, `<th style="padding:2px 8px;text-align:right;white-space:nowrap">`+SettingWords(c.table, name)+`</th>`)
			}
		})
	}
}

// TestReadSettings: List reads a run's settings from its run.json, of every format: today's
// (format 3, the settings once), format 2 (f035eac: the record's fields, the params, the values)
// and format 1 (no values, no precision, no data); a run.json of format 2 or 1 reads into the
// form of today, its fields winning over its values and its params as what it was given.
func TestReadSettings(t *testing.T) {
	dir := t.TempDir()
	today := recorded("new", map[string]string{"recipe": "airbench94", "label-smoothing": "0.1"})
	rec := &Record{Status: RunDone, Data: &data.Provenance{Dataset: "cifar10", Kind: data.KindVerified, TrainImages: 5000, TestImages: 10000}}
	rec.Settings.Values = today.Values
	rec.Settings.Given = map[string]string{"recipe": "airbench94", "label-smoothing": "0.1"}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "new"), 0o755))
	require.NoError(t, rec.Write(filepath.Join(dir, "new")))
	v2 := `{"format": 2, "status": "done", "started": "2026-12-01T10:00:00Z", "dataset": "cifar100-coarse", "model": "cnn", "head": 20,
		"guarded": true, "devices": 4, "batch_size": 512, "target_step": 30, "precision": "f32",
		"params": {"labels": "coarse", "dataset": "cifar100", "lr": "0.1", "json": "true"}, "settings": {"format": 2, "recipe": ""},
		"values": [{"name": "dataset", "words": "dataset", "value": "cifar100"}, {"name": "labels", "words": "labels", "value": "coarse"},
		{"name": "head", "words": "head", "value": "20"}, {"name": "lr", "words": "learning rate", "value": "0.1"},
		{"name": "devices", "words": "devices", "value": "all"}, {"name": "eval-every", "words": "eval every", "value": "6"}]}`
	old := `{"status": "done", "started": "2026-11-01T10:00:00Z", "dataset": "cifar10", "model": "cnn", "head": 10, "guarded": true,
		"devices": 1, "batch_size": 512, "target_step": 30}`
	for name, doc := range map[string]string{"v2": v2, "old": old} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, name), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name, FileName), []byte(doc), 0o644))
	}

	list, err := List(dir)
	require.NoError(t, err)
	require.Len(t, list, 3)
	byName := map[string]Info{}
	for _, r := range list {
		byName[r.Name] = r
	}
	require.Equal(t, "airbench94", byName["new"].Settings["recipe"])
	require.Equal(t, "0.1", byName["new"].Settings["label-smoothing"])
	require.Equal(t, "10", byName["new"].Settings["head"])
	require.NotContains(t, byName["new"].Settings, "checkpoint", "bookkeeping")
	require.Equal(t, map[string]string{"dataset": "cifar100-coarse", "head": "20", "lr": "0.1", "devices": "4", "model": "cnn", "guard": "true",
		"batch": "512", "steps": "30", "precision": "f32"}, byName["v2"].Settings, "format 2: its fields win, its bookkeeping left out")
	require.Equal(t, []any{"cifar100-coarse", 20, 4}, []any{byName["v2"].Dataset, byName["v2"].Head, byName["v2"].Devices})
	require.Equal(t, map[string]string{"dataset": "cifar10", "model": "cnn", "head": "10", "guard": "true", "devices": "1", "batch": "512",
		"steps": "30", "precision": "f32"}, byName["old"].Settings)
	// In the order of the values (format 1's: the record's fields first, in its order), in words.
	require.Equal(t, []string{"dataset", "head", "devices", "lr"}, Differing(byName["old"], byName["v2"]))
	require.Equal(t, []string{"dataset cifar10, head 10, 1 device, lr default", "dataset cifar100-coarse, head 20, 4 devices, learning rate 0.1"},
		Labels(byName["old"], byName["v2"]))
	got, err := ReadRecord(filepath.Join(dir, "v2"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"labels": "coarse", "dataset": "cifar100", "lr": "0.1"}, got.Settings.Given, "what it was given, but --json")

	// The settings travel in `cifarlab runs --json`.
	doc, err := json.Marshal(byName["old"])
	require.NoError(t, err)
	require.Contains(t, string(doc), `"settings":{"batch":"512",`)
}

// TestValidation: a history says what its evaluations were, from its last one; one written
// before the split and TTA were recorded reads as it was (the test split, no TTA).
func TestValidation(t *testing.T) {
	for _, c := range []struct {
		name, doc, want string
	}{
		{"recorded", `{"points":[{"step":1,"eval":{"examples":500,"split":"test","loss":2,"accuracy":0.1}}]}`, "validation: 500 test images, no TTA"},
		{"older history", `{"points":[{"step":1,"eval":{"examples":500,"loss":2,"accuracy":0.1}},{"step":2}]}`, "validation: 500 test images, no TTA"},
		{"with TTA, the last evaluation's", `{"points":[{"step":1,"eval":{"examples":500}},{"step":2,"eval":{"examples":10000,"split":"test","tta":2}}]}`,
			"validation: 10,000 test images, TTA level 2"},
		{"no evaluation", `{"points":[{"step":1}]}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{}
			require.NoError(t, json.Unmarshal([]byte(c.doc), h))
			require.Equal(t, c.want, h.Validation())
		})
	}
	require.Equal(t, "", (*History)(nil).Validation())
}

// TestTableTopKColumn: the runs table has a "test top-5" column only when a run evaluated a top-5
// accuracy (CIFAR-100), filled for those runs: a table of CIFAR-10 runs, which evaluated none,
// has no column that would be empty for every run.
func TestTableTopKColumn(t *testing.T) {
	evaluated := func(name, dataset string, eval string) Info {
		rec := &Record{Format: RecordFormat, Status: RunDone, Result: json.RawMessage(`{"end_step": 20, "loss": 1.5, "eval": ` + eval + `}`)}
		rec.Settings.Values = recorded(name, map[string]string{"dataset": dataset}).Values
		return Info{Name: name, Dir: "/runs/" + name}.withRecord(rec)
	}
	ten := `{"accuracy": 0.5, "examples": 100}`
	hundred := `{"accuracy": 0.25, "top_k": 5, "top_k_accuracy": 0.625, "examples": 100}`
	cifar10 := Table{evaluated("a", "cifar10", ten), evaluated("b", "cifar10", ten)}
	for _, s := range []string{cifar10.String(), cifar10.HTML()} {
		require.NotContains(t, s, "top-5")
		require.Contains(t, s, "50.00%")
	}
	mixed := Table{evaluated("a", "cifar10", ten), evaluated("c", "cifar100", hundred)}
	lines := strings.Split(mixed.String(), "\n")
	require.Equal(t, "run status dataset data model head guard devices steps loss test acc test top-5 wall time from note", strings.Join(strings.Fields(lines[0]), " "))
	require.Equal(t, "c done cifar100 cnn 10 guarded 1 20 1.5000 25.00% 62.50%", strings.Join(strings.Fields(lines[2]), " "))
	require.Contains(t, mixed.HTML(), ">test top-5</th>")
	require.Contains(t, mixed.HTML(), ">62.50%</td>")
}

// TestDepartures: a legend of many runs says once the values most of them share, and each run
// only where it departs from them; two runs, or runs that share no value, are named as Labels
// names them.
func TestDepartures(t *testing.T) {
	run := func(name, seed, lr, ls string) Info {
		return recorded(name, map[string]string{"seed": seed, "lr": lr, "label-smoothing": ls})
	}
	five := []Info{run("a", "1", "11.5", "0.2"), run("b", "2", "5.75", "0.2"), run("c", "3", "11.5", "0.1"), run("d", "1", "11.5", "0.2"),
		run("e", "2", "11.5", "0.2")}
	shared, labels := Departures(five...)
	require.Equal(t, []string{"learning rate 11.5", "label smoothing 0.2"}, shared)
	require.Equal(t, []string{"seed 1 (a)", "seed 2, learning rate 5.75", "seed 3, label smoothing 0.1", "seed 1 (d)", "seed 2"}, labels,
		"two runs alike: by their folders too")

	five[3] = run("d", "4", "11.5", "0.2")
	five[4] = run("e", "5", "11.5", "0.2")
	shared, labels = Departures(five...)
	require.Equal(t, []string{"learning rate 11.5", "label smoothing 0.2"}, shared)
	require.Equal(t, []string{"seed 1", "seed 2, learning rate 5.75", "seed 3, label smoothing 0.1", "seed 4", "seed 5"}, labels)

	base := []Info{run("base", "1", "11.5", "0.2"), run("lr", "1", "5.75", "0.2"), run("ls", "1", "11.5", "0.1")}
	shared, labels = Departures(base...)
	require.Equal(t, []string{"learning rate 11.5", "label smoothing 0.2"}, shared)
	require.Equal(t, []string{"the shared values", "learning rate 5.75", "label smoothing 0.1"}, labels)

	two := []Info{run("a", "1", "11.5", "0.2"), run("b", "2", "11.5", "0.2")}
	shared, labels = Departures(two...)
	require.Empty(t, shared)
	require.Equal(t, Labels(two...), labels)
	require.Equal(t, []string{"seed 1", "seed 2"}, labels)
}
