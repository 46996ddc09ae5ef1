package training

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/stretchr/testify/require"
)

// f035eacRuns holds three runs written by the cifarlab of commit f035eac, whose run.json
// stored the settings four ways (format 2), made by checkpoint_compat_f035eac.sh beside this
// file with that commit's own binary and library: cnn/ (Adam, 3 steps), recipe/ (the airbench94
// recipe on the cnn, interrupted after step 3 of 5) and transfer/ (cnn/ moved to CIFAR-100's
// coarse labels, 3 steps, --from relative to the runs folder), on synthetic data (seed 45, 64
// train and 32 test records), and want.json: what that commit computed and read of them.
const f035eacRuns = "testdata/run-f035eac"

// f035eacWant is one run's part of the want.json of f035eacRuns.
type f035eacWant struct {
	compatWant
	// Info is what f035eac's runs package read of the run.
	Info runs.Info `json:"info"`
}

// TestRunsOff035eacLoadEvaluateResumeAndCompare: runs of f035eac (run.json of format 2) read as
// that commit's runs package read them (each one's settings, and a comparison's differing
// settings, labels and title), load, evaluate to the logits, loss and accuracy it computed (bit
// for bit on its backend and GoMLX, else within the reordering tolerance of the cnn), and resume
// as `cifarlab train` again with their flags and more steps: their later steps are those f035eac
// resumed its copies to, and their run.json is then of today's form, with what they were given.
func TestRunsOff035eacLoadEvaluateResumeAndCompare(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(f035eacRuns, "want.json"))
	require.NoError(t, err)
	var want struct {
		Commit, GoMLX, Backend string
		Differing              []string
		Labels                 []string
		Compared               string
	}
	require.NoError(t, json.Unmarshal(raw, &want))
	var byRun map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &byRun))
	same := labtest.Backend(t).Name() == want.Backend && gomlxVersion(t) == want.GoMLX // the fixture's backend and GoMLX
	runsDir := t.TempDir()
	require.NoError(t, os.CopyFS(runsDir, os.DirFS(f035eacRuns)))
	t.Chdir(runsDir) // the transfer's source, cnn, is relative to it

	names := []string{"cnn", "recipe", "transfer"}
	var list []runs.Info
	for _, run := range names {
		var w f035eacWant
		require.NoError(t, json.Unmarshal(byRun[run], &w))
		info := runs.Read(run)
		require.Equal(t, w.Info.Settings, info.Settings, "%s: its settings as f035eac read them", run)
		require.Equal(t, []any{w.Info.Status, w.Info.Dataset, w.Info.Model, w.Info.Head, w.Info.Guarded, w.Info.Devices, w.Info.Precision, w.Info.From},
			[]any{info.Status, info.Dataset, info.Model, info.Head, info.Guarded, info.Devices, info.Precision, info.From}, run)
		list = append(list, info)
	}
	require.Equal(t, want.Differing, runs.Differing(list...))
	require.Equal(t, want.Labels, runs.Labels(list...))
	require.Equal(t, want.Compared, runs.Compared(list...))

	for _, run := range names {
		var w f035eacWant
		require.NoError(t, json.Unmarshal(byRun[run], &w))
		t.Run(run, func(t *testing.T) { checkf035eacRun(t, run, w, same) })
	}
}

// checkf035eacRun loads run (in the working folder), evaluates it against w and resumes it with
// its flags to the step of w's resumed copy; same: on the backend and GoMLX that wrote it, bit
// for bit.
func checkf035eacRun(t *testing.T, run string, w f035eacWant, same bool) {
	rec, err := runs.ReadRecord(run)
	require.NoError(t, err)
	require.Equal(t, 2, rec.Format)
	given := rec.Settings.Given
	s := Defaults()
	require.NoError(t, s.Apply(given), "its flags")
	ld, err := LoadCheckpoint(run, labtest.Backend(t))
	require.NoError(t, err)
	require.Equal(t, compatSteps, ld.Info.Step)
	old := append([]runs.HistoryPoint(nil), ld.History.Points...)
	synth := compatSynth
	train, err := data.SynthesizeRecords(ld.Info.Data.Spec, data.SplitTrain, synth)
	require.NoError(t, err)
	test, err := data.SynthesizeRecords(ld.Info.Data.Spec, data.SplitTest, synth)
	require.NoError(t, err)
	ev, logits := fixtureLogits(t, ld, test)
	env := Env{Train: train, Test: test, Backend: labtest.Backend(t), Progress: ProgressOff}
	tol, _, _ := requireFixtureLogits(t, w.Logits, w.Loss, w.Accuracy, ev, logits)
	if same {
		require.Equal(t, w.Logits, logits, "bit for bit on the fixture's backend and GoMLX")
		require.Equal(t, w.Loss, ev.Loss)
	}

	s.Run.Steps, s.Checkpoint.Dir, s.Record.Params = compatSteps+len(w.Resumed), run, given
	res := resumeRun(t, s, env, compatSteps)
	require.Equal(t, old, res.History.Points[:compatSteps], "the resumed history continues the run's")
	for i, p := range res.History.Points[compatSteps:] {
		wp := w.Resumed[i]
		require.Equal(t, []any{wp.Step, wp.LearningRate, wp.BatchAccuracy}, []any{p.Step, p.LearningRate, p.BatchAccuracy}, "step %d", p.Step)
		if same {
			require.Equal(t, wp.Loss, p.Loss, "step %d's loss, bit for bit", p.Step)
		} else if i == 0 { // later steps follow from another order of sums
			require.InDelta(t, wp.Loss, p.Loss, 2*tol, "step %d's loss", p.Step)
		}
		require.False(t, math.IsNaN(p.Loss) || math.IsInf(p.Loss, 0))
	}

	rec, err = runs.ReadRecord(run)
	require.NoError(t, err)
	require.Equal(t, runs.RecordFormat, rec.Format, "written again in today's form")
	require.Equal(t, given, rec.Settings.Given)
	from, _ := rec.Settings.Value("from")
	require.Equal(t, s.Transfer.From, from)
}
