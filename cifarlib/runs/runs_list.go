package runs

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/internal/tfevents"
)

// DirEnv names the folder of runs that the notebooks' Lab and `cifarlab runs` use; default:
// "runs" in the data folder (DefaultDir).
const DirEnv = "CIFARLAB_RUNS"

// DefaultDir is the folder of runs: $CIFARLAB_RUNS, else dataDir/runs.
func DefaultDir(dataDir string) string {
	if dir := os.Getenv(DirEnv); dir != "" {
		return dir
	}
	return filepath.Join(dataDir, "runs")
}

// Info is one run of a runs folder, as List finds it: a row of the runs table.
type Info struct {
	// Name is the folder's name, Dir its path.
	Name string `json:"name"`
	Dir  string `json:"dir"`
	// Status says where the run stands; Reason says why, for every status but RunDone
	// (the error of a failed run, what is missing from an incomplete or broken one).
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Dataset, Model, Head (classifier width), Guarded and Devices describe what was trained.
	Dataset string `json:"dataset,omitempty"`
	Model   string `json:"model,omitempty"`
	Head    int    `json:"head,omitempty"`
	Guarded bool   `json:"guarded"`
	Devices int    `json:"devices,omitempty"`
	// Backend describes the backend the run trained on (backends.Name), "" when its run.json
	// records no result; Precision is its precision ("" when not recorded).
	Backend   string             `json:"backend,omitempty"`
	Precision cifarlib.Precision `json:"precision,omitempty"`
	// Steps is the global step reached (the last History point's, for an incomplete run).
	Steps int `json:"steps"`
	// Loss is the last batch loss recorded.
	Loss float64 `json:"loss"`
	// TestAccuracy and TestTopK are the final evaluation on the test split (top-5: CIFAR-100),
	// TestK the k of TestTopK (0: the evaluation computed none); HasTest is false when the run
	// has none (SkipFinalEval, interrupted, failed).
	TestAccuracy float64 `json:"test_accuracy,omitempty"`
	TestTopK     float64 `json:"test_top_k,omitempty"`
	TestK        int     `json:"test_k,omitempty"`
	HasTest      bool    `json:"has_test"`
	// ChanceLevel is true when the test accuracy lies within the noise of a model that learned
	// nothing (Chance: 1/classes, give or take ChanceSigmas binomial standard deviations on the
	// images evaluated); Reason then says so.
	ChanceLevel bool `json:"chance_level,omitempty"`
	// WallTime is the time spent in Train, resumes added up (0 when not recorded).
	WallTime time.Duration `json:"wall_time_ns"`
	// From is the run a transferred run was carried from (training.Settings.Transfer.From), "" otherwise.
	From string `json:"from,omitempty"`
	// Data is what the run was trained on (synthetic or real, layout, folder, images per
	// split); nil when its run.json does not say (written before it was recorded).
	Data *data.Provenance `json:"data,omitempty"`
	// TensorBoard is true when the folder holds TensorBoard event files.
	TensorBoard bool `json:"tensorboard"`
	// Settings are the run's settings by name, as its run.json records them (Record.Settings):
	// every setting of its table but its bookkeeping, the dataset by its id, and what its data
	// held (data, train-images), e.g. "lr", "label-smoothing", "seed"; nil without a run.json.
	// Differing, Value and Describe read them.
	Settings map[string]string `json:"settings,omitempty"`
	// Values are the run's RunSettings.Values: its settings' order and their names in words (a
	// comparison names them so); nil without a run.json.
	Values []Setting `json:"values,omitempty"`
	// History is the run's curves (nil when it has none).
	History *History `json:"-"`
}

// Table is the table List returns, one row per run folder.
type Table []Info

// List lists the run folders of dir (a runs folder: training.Settings.Checkpoint.Dir of each run
// is one of its sub-folders), in name order. A folder it cannot fully read is listed with its
// status and the reason, never an error: a run still training or killed (RunIncomplete), an
// unreadable run.json or history.json (RunBroken), a folder of something else (RunForeign).
// Files and hidden folders are left out. The error is for dir itself (missing, unreadable).
func List(dir string) (Table, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("runs: listing the runs folder: %w", err)
	}
	var runs Table
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		runs = append(runs, Read(filepath.Join(dir, e.Name()))) // os.ReadDir: in name order
	}
	return runs, nil
}

// Read reads the run in dir: its run.json, history.json and what else it holds. What it
// cannot read is reported in the Status and Reason fields (see List).
func Read(dir string) Info {
	info := Info{Name: filepath.Base(dir), Dir: dir}
	names := map[string]bool{}
	var events, checkpoints bool
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			names[e.Name()] = true
			events = events || strings.HasPrefix(e.Name(), tfevents.FilePrefix)
			checkpoints = checkpoints || strings.HasPrefix(e.Name(), "checkpoint-")
		}
	} else {
		return info.broken("cannot read the folder: %v", err)
	}
	info.TensorBoard = events

	if names[HistoryFileName] {
		h, err := LoadHistory(dir)
		if err != nil {
			return info.broken("%v", err)
		}
		info.History = h
		if last, ok := h.Last(); ok {
			info.Steps, info.Loss = last.Step, last.Loss
		}
	}
	if !names[FileName] {
		if info.History == nil && !checkpoints {
			info.Status, info.Reason = RunForeign, "not a cifarlab run: no "+FileName+", "+HistoryFileName+" or checkpoint"
			return info
		}
		info.Status, info.Reason = RunIncomplete, "no "+FileName+": written by a cifarlab that kept none, or its training was killed before it started"
		return info
	}
	rec, err := ReadRecord(dir)
	if err != nil {
		return info.broken("%v", err)
	}
	return info.withRecord(rec)
}

// withRecord is info with what the run's record says: what it trained, its result and its status.
func (info Info) withRecord(rec *Record) Info {
	var chance ChanceBand
	info.Settings, info.Values = settingsOf(rec), rec.Settings.Values
	s := info.Settings
	info.Dataset, info.Model, info.Head, info.Guarded, info.Devices = s["dataset"], s["model"], atoi(s["head"]), s["guard"] == "true", atoi(s["devices"])
	info.WallTime, info.From, info.Status, info.Data, info.Precision = rec.WallTime, s["from"], rec.Status, rec.Data, cifarlib.Precision(s["precision"])
	if rec.Result != nil {
		var r recordedResult
		if err := json.Unmarshal(rec.Result, &r); err != nil {
			return info.broken("%s: result: %v", FileName, err)
		}
		info.Steps, info.Loss, info.Backend = r.EndStep, r.Loss, r.Backend
		if r.Eval != nil {
			info.HasTest, info.TestAccuracy, info.TestTopK, info.TestK = true, r.Eval.Accuracy, r.Eval.TopKAccuracy, r.Eval.TopK
			classes := len(r.Eval.PerClass) // the dataset's classes
			if classes == 0 {
				classes = info.Head
			}
			chance = Chance(classes, r.Eval.Examples)
			info.ChanceLevel = chance.Contains(r.Eval.Accuracy)
		}
	}
	switch rec.Status {
	case RunRunning:
		info.Status = RunIncomplete
		info.Reason = fmt.Sprintf("started %s and not finished: still training, or its process was killed (the checkpoint, if any, resumes it)",
			rec.Started.Local().Format("2006-01-02 15:04:05"))
	case RunFailed:
		info.Reason = rec.Error
	case RunInterrupted:
		info.Reason = fmt.Sprintf("interrupted at step %d of %s: train again with the same folder to resume", info.Steps, s["steps"])
	}
	if info.ChanceLevel {
		info.Reason = strings.TrimPrefix(info.Reason+"; test accuracy at chance level ("+chance.String()+"): the run learned nothing", "; ")
	}
	if rec.Warning != "" {
		info.Reason = strings.TrimPrefix(info.Reason+"; "+rec.Warning, "; ")
	}
	return info
}

// Source says where the run's numbers come from: its data and machine, for a chart's caption.
func (info Info) Source() Source {
	return Source{Data: info.Data, Backend: info.Backend, Devices: info.Devices, Precision: info.Precision}
}

func (info Info) broken(format string, args ...any) Info {
	info.Status, info.Reason = RunBroken, fmt.Sprintf(format, args...)
	return info
}

// runColumns are the columns of the runs table; the columns of the settings its runs differ in
// go before "steps" (Table.settingColumns), and "test top-5" is left out of a table whose runs
// evaluated none (CIFAR-10's: Table.columns).
var runColumns = []string{"run", "status", "dataset", "data", "model", "head", "guard", "devices", "steps", "loss", "test acc", topKColumn, "wall time", "from", "note"}

// topKColumn is the column of the runs' test top-5 accuracy, and topKAt its place in runColumns.
const (
	topKColumn = "test top-5"
	topKAt     = 11
)

// settingsAt is where the settings' columns go: before "steps".
const settingsAt = 8

// shownSettings are the settings runColumns show in any case (the steps column shows the
// steps reached; an interrupted run's note says its target).
var shownSettings = []string{"dataset", "data", "model", "head", "guard", "devices", "steps", "from"}

// settingColumns are the settings in which the table's runs differ (Differing), but those
// runColumns show: each a column of the table, none when the runs agree.
func (rs Table) settingColumns() []string {
	return slices.DeleteFunc(Differing(rs...), func(name string) bool { return slices.Contains(shownSettings, name) })
}

// columns is the table's header: runColumns, with the settings' names in words
// (SettingWords) before "steps", and the top-5 column only when a run evaluated one (topK).
func (rs Table) columns(settings []string) []string {
	words := make([]string, len(settings))
	for i, name := range settings {
		words[i] = SettingWords(rs, name)
	}
	return slices.Concat(runColumns[:settingsAt], words, rs.withTopK(runColumns)[settingsAt:])
}

// topK reports whether a run of the table evaluated a top-k accuracy (its column is shown).
func (rs Table) topK() bool {
	return slices.ContainsFunc(rs, func(r Info) bool { return r.HasTest && r.TestK > 0 })
}

// withTopK is row, one cell per runColumns, without its top-5 cell when the table has no top-5
// column (topK).
func (rs Table) withTopK(row []string) []string {
	if rs.topK() {
		return row
	}
	return slices.Delete(slices.Clone(row), topKAt, topKAt+1)
}

// row is run r's cells in the table: its cells, less the top-5 cell when the table has no top-5
// column, with its values of settings (Value) before "steps".
func (rs Table) row(r Info, settings []string) []string {
	c := rs.withTopK(r.cells())
	values := make([]string, len(settings))
	for i, name := range settings {
		values[i] = r.Value(name)
	}
	return slices.Concat(c[:settingsAt], values, c[settingsAt:])
}

// cells formats a run as the cells of the table's runColumns.
func (info Info) cells() []string {
	from := info.From
	if from != "" && filepath.Clean(filepath.Dir(from)) == filepath.Dir(info.Dir) {
		from = filepath.Base(from) // a run of the same folder: its name
	}
	c := []string{info.Name, string(info.Status), info.Dataset, "", info.Model, "", "", "", "", "", "", "", "", from, info.Reason}
	if info.Data != nil {
		c[3] = info.Data.Kind
	}
	if info.Head > 0 {
		c[5] = fmt.Sprint(info.Head)
	}
	if info.Dataset != "" {
		c[6] = map[bool]string{true: "guarded", false: "UNGUARDED"}[info.Guarded]
	}
	if info.Devices > 0 {
		c[7] = fmt.Sprint(info.Devices)
	}
	if info.Steps > 0 {
		c[8], c[9] = fmt.Sprint(info.Steps), fmt.Sprintf("%.4f", info.Loss)
	}
	if info.HasTest {
		c[10] = fmt.Sprintf("%.2f%%", 100*info.TestAccuracy)
		if info.ChanceLevel {
			c[10] += " (chance)"
		}
		if info.TestK > 0 {
			c[topKAt] = fmt.Sprintf("%.2f%%", 100*info.TestTopK)
		}
	}
	if info.WallTime > 0 {
		c[12] = info.WallTime.Round(100 * time.Millisecond).String()
	}
	return c
}

// WriteTable writes the runs as an aligned text table (what `cifarlab runs` prints), with a
// column for each setting in which the runs differ (e.g. "learning rate", "seed": see
// Differing), after the columns of what was trained.
func (rs Table) WriteTable(w io.Writer) error {
	settings := rs.settingColumns()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(rs.columns(settings), "\t"))
	for _, r := range rs {
		fmt.Fprintln(tw, strings.Join(rs.row(r, settings), "\t"))
	}
	return tw.Flush()
}

// String is the text table; "no runs" when there are none.
func (rs Table) String() string {
	if len(rs) == 0 {
		return "no runs"
	}
	var b strings.Builder
	_ = rs.WriteTable(&b)
	return b.String()
}

// HTML is the table as an HTML table (what nb.Show displays), a row's status as its class:
// numbers and settings right-aligned, words left-aligned, and only the note column wraps. It has
// the columns of WriteTable.
func (rs Table) HTML() string {
	settings := rs.settingColumns()
	columns := rs.columns(settings)
	style := func(i int) string {
		if i >= settingsAt && i < settingsAt+len(settings) {
			return `padding:2px 8px;text-align:right;white-space:nowrap`
		}
		switch columns[i] {
		case "head", "devices", "steps", "loss", "test acc", topKColumn, "wall time":
			return `padding:2px 8px;text-align:right;white-space:nowrap`
		case "note":
			return `padding:2px 8px;text-align:left`
		}
		return `padding:2px 8px;text-align:left;white-space:nowrap`
	}
	var b strings.Builder
	b.WriteString(`<table class="cifarlab-runs"><thead><tr>`)
	for i, c := range columns {
		fmt.Fprintf(&b, `<th style="%s">%s</th>`, style(i), html.EscapeString(c))
	}
	b.WriteString("</tr></thead><tbody>")
	for _, r := range rs {
		fmt.Fprintf(&b, `<tr class="%s">`, html.EscapeString(string(r.Status)))
		for i, c := range rs.row(r, settings) {
			fmt.Fprintf(&b, `<td style="%s">%s</td>`, style(i), html.EscapeString(c))
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</tbody></table>")
	return b.String()
}

// Find returns the run called name, or false.
func (rs Table) Find(name string) (Info, bool) {
	for _, r := range rs {
		if r.Name == name {
			return r, true
		}
	}
	return Info{}, false
}

// recordedResult is the part of run.json's result that the runs table shows.
type recordedResult struct {
	EndStep int     `json:"end_step"`
	Loss    float64 `json:"loss"`
	Backend string  `json:"backend"`
	Eval    *struct {
		Accuracy     float64           `json:"accuracy"`
		TopK         int               `json:"top_k"`
		TopKAccuracy float64           `json:"top_k_accuracy"`
		Examples     int               `json:"examples"`
		PerClass     []json.RawMessage `json:"per_class"`
	} `json:"eval"`
}
