package training

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/internal/tfevents"
	"github.com/cifarlab/cifarlab/internal/tfevents/tbtest"
	"github.com/stretchr/testify/require"
)

// testRun is a test's run, edited as one: its settings and its env.
type testRun struct {
	Settings
	Env
}

// trainRun trains a small linear CIFAR-100 model into runs/name.
func trainRun(t *testing.T, runsDir, name string, edit func(*testRun)) (*Result, error) {
	t.Helper()
	return trainRunCtx(context.Background(), t, runsDir, name, edit)
}

// trainRunCtx is trainRun with a context.
func trainRunCtx(ctx context.Context, t *testing.T, runsDir, name string, edit func(*testRun)) (*Result, error) {
	t.Helper()
	train, test := labtest.TrainTestRecords(t, data.CIFAR100(data.LabelsFine), 256, 80, 3)
	r := testRun{Settings: with(t, Defaults(), map[string]string{"dataset": "cifar100", "model": cifarlib.ArchLinear, "steps": "6",
		"batch": "16", "seed": "1", "eval-every": "3", "eval-examples": "40", "checkpoint": filepath.Join(runsDir, name)}),
		Env: Env{Train: train, Test: test, Backend: labtest.Backend(t), Progress: ProgressOff}}
	if edit != nil {
		edit(&r)
	}
	return Train(ctx, r.Settings, r.Env)
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// listedRuns are the runs of TestListRuns' runs folder, as Train returned them.
type listedRuns struct {
	dir                                       string
	done, unguarded, interrupted, transferred *Result
}

// makeListedRuns fills a runs folder with a run of each status: trained, failed to start,
// unguarded, interrupted, transferred, and hand-made folders.
func makeListedRuns(t *testing.T) listedRuns {
	runsDir := t.TempDir()
	done, err := trainRun(t, runsDir, "a-done", nil)
	require.NoError(t, err)
	guarded := with(t, Defaults(), map[string]string{"dataset": "cifar100", "model": cifarlib.ArchLinear, "head": "10", "steps": "6",
		"checkpoint": filepath.Join(runsDir, "b-guarded")})
	_, err = Train(context.Background(), guarded, Env{})
	require.ErrorIs(t, err, cifarlib.ErrHeadMismatch)
	require.NoDirExists(t, guarded.Checkpoint.Dir, "Train leaves nothing behind when it fails before the first step")
	require.NoError(t, RecordFailedStart(guarded, Env{}, err))
	require.NoError(t, RecordFailedStart(with(t, Defaults(), map[string]string{"steps": "1", "checkpoint": filepath.Join(runsDir, "a-done")}), Env{}, err),
		"a folder holding a run keeps its record")
	require.NoError(t, RecordFailedStart(with(t, Defaults(), map[string]string{"steps": "1", "checkpoint": filepath.Join(runsDir, "z-config")}), Env{},
		&ConfigError{Field: "Data.Spec"}))
	require.NoDirExists(t, filepath.Join(runsDir, "z-config"), "config errors record nothing")
	unguarded, err := trainRun(t, runsDir, "c-unguarded", func(c *testRun) { c.Model.Head, c.Model.Unguarded, c.Eval.SkipFinal = 10, true, true })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	interrupted, err := trainRunCtx(ctx, t, runsDir, "d-interrupted", func(c *testRun) {
		c.OnPoint = func(p runs.HistoryPoint) error {
			if p.Step == 2 {
				cancel() // like SIGINT: training stops after this step
			}
			return nil
		}
	})
	require.NoError(t, err)
	require.True(t, interrupted.Interrupted)

	transferred, err := trainRun(t, runsDir, "k-transferred", func(c *testRun) {
		c.Data.Spec, c.Transfer.From, c.Eval.Every = data.CIFAR10(), filepath.Join(runsDir, "a-done"), EvalAuto
		c.Train, c.Test = labtest.TrainTestRecords(t, data.CIFAR10(), 256, 80, 4)
	})
	require.NoError(t, err)
	writeHandMadeRuns(t, runsDir)
	return listedRuns{dir: runsDir, done: done, unguarded: unguarded, interrupted: interrupted, transferred: transferred}
}

// writeHandMadeRuns writes hand-made folders into runsDir: a run killed mid-training (its
// run.json still says running), one written before run.json existed, unreadable records, and a
// folder of something else.
func writeHandMadeRuns(t *testing.T, runsDir string) {
	running, err := os.ReadFile(filepath.Join(runsDir, "a-done", runs.FileName))
	require.NoError(t, err)
	var rec runs.Record
	require.NoError(t, json.Unmarshal(running, &rec))
	rec.Status, rec.Result = runs.RunRunning, nil
	require.NoError(t, rec.Write(filepath.Join(runsDir, "e-killed")))
	hist, err := os.ReadFile(filepath.Join(runsDir, "a-done", runs.HistoryFileName))
	require.NoError(t, err)
	writeTestFile(t, filepath.Join(runsDir, "f-legacy", runs.HistoryFileName), string(hist))
	writeTestFile(t, filepath.Join(runsDir, "g-torn", runs.FileName), `{"status": "done", "started": "2026-`)
	writeTestFile(t, filepath.Join(runsDir, "h-bad-history", runs.FileName), string(running))
	writeTestFile(t, filepath.Join(runsDir, "h-bad-history", runs.HistoryFileName), "not json")
	writeTestFile(t, filepath.Join(runsDir, "i-status", runs.FileName), `{"status": "finished"}`)
	writeTestFile(t, filepath.Join(runsDir, "j-photos", "cat.jpg"), "jpeg")
	writeTestFile(t, filepath.Join(runsDir, "notes.txt"), "a file, not a run")
	writeTestFile(t, filepath.Join(runsDir, ".cache", runs.FileName), `{"status": "done"}`)
}

func TestListRuns(t *testing.T) {
	lr := makeListedRuns(t)
	runsDir, done, unguarded, interrupted, transferred := lr.dir, lr.done, lr.unguarded, lr.interrupted, lr.transferred
	list, err := runs.List(runsDir)
	require.NoError(t, err)
	var names []string
	for _, r := range list {
		names = append(names, r.Name)
	}
	require.Equal(t, []string{"a-done", "b-guarded", "c-unguarded", "d-interrupted", "e-killed", "f-legacy", "g-torn", "h-bad-history", "i-status", "j-photos", "k-transferred"}, names)
	for _, c := range []struct {
		name   string
		status runs.Status
		reason string // a part of Reason ("" for none)
		steps  int
		loss   float64
		test   *EvalResult
	}{
		{"a-done", runs.RunDone, "", 6, done.Loss, done.Eval},
		{"b-guarded", runs.RunFailed, "model head has 10 outputs but dataset cifar100 has 100 classes", 0, 0, nil},
		{"c-unguarded", runs.RunDone, "", 6, unguarded.Loss, nil},
		{"d-interrupted", runs.RunInterrupted, "interrupted at step 2 of 6: train again with the same folder to resume", 2, interrupted.Loss, nil},
		{"e-killed", runs.RunIncomplete, "and not finished: still training, or its process was killed", 0, 0, nil},
		{"f-legacy", runs.RunIncomplete, "no run.json", 6, done.Loss, nil},
		{"g-torn", runs.RunBroken, "g-torn/run.json: unexpected end of JSON input: the file is not a cifarlib run record", 0, 0, nil},
		{"h-bad-history", runs.RunBroken, "h-bad-history/history.json: invalid character", 0, 0, nil},
		{"i-status", runs.RunBroken, `unknown status "finished"`, 0, 0, nil},
		{"j-photos", runs.RunForeign, "not a cifarlab run: no run.json, history.json or checkpoint", 0, 0, nil},
		{"k-transferred", runs.RunDone, "", 6, transferred.Loss, transferred.Eval},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, ok := list.Find(c.name)
			require.True(t, ok)
			require.Equal(t, c.status, r.Status)
			require.Equal(t, filepath.Join(runsDir, c.name), r.Dir)
			if c.reason == "" {
				require.Empty(t, r.Reason)
			} else {
				require.Contains(t, r.Reason, c.reason)
			}
			require.Equal(t, c.steps, r.Steps)
			require.Equal(t, c.loss, r.Loss)
			require.Equal(t, c.test != nil, r.HasTest)
			if c.test != nil {
				require.Equal(t, c.test.Accuracy, r.TestAccuracy)
				require.Equal(t, c.test.TopKAccuracy, r.TestTopK)
			}
		})
	}
	checkRunInfos(t, list, lr)
	checkRunsTable(t, list)

	_, err = runs.List(filepath.Join(runsDir, "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "runs: listing the runs folder")
}

// checkRunInfos checks what the runs table says of TestListRuns' trained runs.
func checkRunInfos(t *testing.T, list runs.Table, lr listedRuns) {
	runsDir, done := lr.dir, lr.done
	a, _ := list.Find("a-done")
	require.Equal(t, runs.Info{Name: "a-done", Dir: a.Dir, Status: runs.RunDone, Dataset: "cifar100", Model: cifarlib.ArchLinear, Head: 100, Guarded: true,
		Devices: 1, Backend: done.Backend, Precision: done.Precision, Steps: 6, Loss: done.Loss, TestAccuracy: done.Eval.Accuracy, TestTopK: done.Eval.TopKAccuracy, TestK: 5, HasTest: true,
		WallTime: a.WallTime, TensorBoard: true, History: done.History, Data: a.Data, Settings: a.Settings, Values: a.Values}, a)
	// Its settings: every setting of the table (run.json's values), but its bookkeeping.
	for name, value := range map[string]string{"dataset": "cifar100", "data": data.KindSynthetic, "train-images": strconv.Itoa(done.Data.TrainImages),
		"model": "linear", "head": "100", "guard": "true", "batch": "16", "steps": "6", "devices": "1", "precision": "f32", "lr": "0.001", "seed": "1"} {
		require.Equal(t, value, a.Settings[name], name)
	}
	require.Len(t, a.Values, len(Fields()), "every setting")
	require.Equal(t, &done.Data, a.Data)
	require.Equal(t, data.Provenance{Dataset: "cifar100", Kind: data.KindSynthetic, TrainImages: done.Data.TrainImages,
		TestImages: done.Data.TestImages}, done.Data, "labtest's records are SynthesizeRecords'")
	require.Positive(t, done.Data.TrainImages)
	require.Greater(t, a.WallTime, done.Duration, "the wall time covers training and the final evaluation")
	k, _ := list.Find("k-transferred")
	require.Equal(t, []any{filepath.Join(runsDir, "a-done"), "cifar10", 10}, []any{k.From, k.Dataset, k.Head})
	c, _ := list.Find("c-unguarded")
	require.Equal(t, []any{10, false}, []any{c.Head, c.Guarded})
	b, _ := list.Find("b-guarded")
	require.Equal(t, []any{"cifar100", 10, true, 0, false}, []any{b.Dataset, b.Head, b.Guarded, b.Steps, b.TensorBoard})
}

// checkRunsTable checks the text and HTML tables of TestListRuns' runs.
func checkRunsTable(t *testing.T, list runs.Table) {
	var text bytes.Buffer
	require.NoError(t, list.WriteTable(&text))
	lines := strings.Split(strings.TrimSuffix(text.String(), "\n"), "\n")
	require.Len(t, lines, 1+len(list))
	// The runs differ in their training images (the failed start recorded no data), batch and
	// seed (its settings are the defaults: 32, 0) and final evaluation (c-unguarded skipped it):
	// a column each, before the steps.
	require.Regexp(t, `^run +status +dataset +data +model +head +guard +devices +training images +batch size +seed +no final evaluation +steps +loss +test acc +test top-5 +wall time +from +note$`, lines[0])
	require.Regexp(t, `^a-done +done +cifar100 +synthetic +linear +100 +guarded +1 +256 +16 +1 +false +6 +\d+\.\d{4} +\d+\.\d\d% +\d+\.\d\d% +[0-9.]+m?s +$`, lines[1])
	require.Regexp(t, `^b-guarded +failed +cifar100 +linear +10 +guarded +1 +not recorded +32 +0 +false +model head has 10 outputs`, lines[2])
	require.Regexp(t, `^c-unguarded +done +cifar100 +synthetic +linear +10 +UNGUARDED +1 +256 +16 +1 +true +6 `, lines[3])
	require.Regexp(t, `^k-transferred +done +cifar10 +synthetic +linear +10 +guarded +1 +256 +16 +1 +false +6 +\d+\.\d{4} +\d+\.\d\d% +[0-9.]+m?s +a-done +$`, lines[11])
	left, right := `<td style="padding:2px 8px;text-align:left;white-space:nowrap">`, `<td style="padding:2px 8px;text-align:right;white-space:nowrap">`
	require.Contains(t, list.HTML(), `<tr class="failed">`+left+`b-guarded</td>`+left+`failed</td>`+left+`cifar100</td>`+left+`</td>`+left+`linear</td>`+
		right+`10</td>`+left+`guarded</td>`)
	require.Contains(t, list.HTML(), `<td style="padding:2px 8px;text-align:left">model head has 10 outputs`)
	require.Equal(t, "no runs", runs.Table(nil).String())
}

// TestTensorBoardEqualsHistory trains, resumes, and reads the run's TensorBoard events with
// TensorBoard's own reader: every scalar equals the float32 of its history.json value (the
// metrics are float32 in the graph, so the float64 in history.json rounds back exactly).
func TestTensorBoardEqualsHistory(t *testing.T) {
	tbtest.Python(t) // fails in CI, skips elsewhere, without TensorBoard
	runsDir := t.TempDir()
	first, err := trainRun(t, runsDir, "run", func(c *testRun) { c.Run.Steps, c.Eval.Every, c.Record.HistoryEvery = 8, 4, 1 })
	require.NoError(t, err)
	second, err := trainRun(t, runsDir, "run", func(c *testRun) { c.Run.Steps, c.Eval.Every, c.Record.HistoryEvery = 12, 4, 1 })
	require.NoError(t, err)
	require.True(t, second.Resumed)

	h, err := runs.LoadHistory(filepath.Join(runsDir, "run"))
	require.NoError(t, err)
	require.Len(t, h.Points, 12)
	want := map[string][]tbtest.Point{}
	add := func(tag string, step int, v float64) {
		want[tag] = append(want[tag], tbtest.Point{Step: int64(step), Value: float32(v)})
	}
	for _, p := range h.Points {
		add(tagTrainLoss, p.Step, p.Loss)
		require.NotNil(t, p.BatchAccuracy, "step %d", p.Step)
		add(tagTrainAccuracy, p.Step, *p.BatchAccuracy)
		add(tagTrainTopK, p.Step, p.TopK)
		add(tagLearningRate, p.Step, p.LearningRate)
		if e := p.Eval; e != nil {
			add(tagTestLoss, p.Step, e.Loss)
			add(tagTestAccuracy, p.Step, e.Accuracy)
			add(tagTestTopK, p.Step, e.TopK)
		}
	}
	require.Len(t, want[tagTestAccuracy], 3)
	for _, r := range []*Result{first, second} { // each run's final evaluation, at its last step
		add(tagFinalLoss, r.EndStep, r.Eval.Loss)
		add(tagFinalAccuracy, r.EndStep, r.Eval.Accuracy)
		add(tagFinalTopK, r.EndStep, r.Eval.TopKAccuracy)
	}
	got := tbtest.ReadScalars(t, runsDir)
	require.Equal(t, map[string]map[string][]tbtest.Point{"run": want}, got)
	for _, p := range h.Points {
		require.Equal(t, p.Loss, float64(float32(p.Loss)), "history.json holds float32 values")
	}
}

// A run whose TensorBoard events cannot be written trains to the end anyway: the error is
// logged, recorded in run.json and shown in the runs table.
func TestTensorBoardFailureDoesNotStopTraining(t *testing.T) {
	saved := createEvents
	createEvents = func(string) (*tfevents.Writer, error) { return nil, errors.New("tfevents: disk full") }
	defer func() { createEvents = saved }()
	runsDir := t.TempDir()
	var log bytes.Buffer
	res, err := trainRun(t, runsDir, "run", func(c *testRun) { c.Log = &log })
	require.NoError(t, err)
	require.Equal(t, 6, res.EndStep)
	require.Equal(t, 1, strings.Count(log.String(), "note: tfevents: disk full (training goes on)\n"), log.String())
	rec, err := runs.ReadRecord(filepath.Join(runsDir, "run"))
	require.NoError(t, err)
	require.Equal(t, []any{runs.RunDone, "tfevents: disk full"}, []any{rec.Status, rec.Warning})
	info := runs.Read(filepath.Join(runsDir, "run"))
	require.Equal(t, []any{runs.RunDone, "tfevents: disk full", false}, []any{info.Status, info.Reason, info.TensorBoard})
}
