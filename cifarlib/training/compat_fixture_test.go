package training

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/checkpoint"
	"github.com/stretchr/testify/require"
)

// recipeRun is a run folder of format 1, written by the lab before Settings (commit 4805295's
// code, by the test TestWriteRecipeRunFixture of commit 1197233): the airbench94 recipe on the
// cnn (nesterov, triangle schedule, lookahead, label smoothing, alternating-flip augmentation,
// 0.75 epochs of the 64 synthetic training images at batch 8: 6 steps, final TTA 2),
// interrupted after step 3. Its want.json holds what that code computed: the checkpoint's
// logits on the synthetic test split, and the evaluation and weights of the same run trained
// straight to step 6.
const (
	recipeRun       = "testdata/run-4805295-recipe"
	recipeRunStep   = 3
	recipeRunSteps  = 6
	recipeRunImages = 32
	// recipeRunGoMLX is the GoMLX of commit 4805295, which wrote recipeRun.
	recipeRunGoMLX = "v0.28.8"
)

// recipeRunWant is want.json of recipeRun.
type recipeRunWant struct {
	Backend string `json:"backend"`
	// Logits, Loss and Accuracy are the step-3 checkpoint's on the test split (no TTA).
	Logits   [][]float32 `json:"logits"`
	Loss     float64     `json:"loss"`
	Accuracy float64     `json:"accuracy"`
	// Straight is the run trained straight to step 6: its final evaluation (TTA 2) and the
	// SHA-256 of its variables (trainedHash).
	Straight struct {
		Loss     float64 `json:"loss"`
		Accuracy float64 `json:"accuracy"`
		Weights  string  `json:"weights"`
	} `json:"straight"`
}

// recipeRunSettings are the settings of recipeRun (its Config then: the recipe, the cnn, batch
// 8, 0.75 epochs, seed 46, validations every 2 steps on 16 examples at batch 16) and its Env.
func recipeRunSettings(t *testing.T, dir string) (Settings, Env) {
	train, test := labtest.TrainTestRecords(t, data.CIFAR10(), 64, recipeRunImages, 46)
	s := recipeOn(cifarlib.ArchCNN, 0.75, 8, 46)
	s.Eval = EvalSettings{Every: 2, Examples: 16, BatchSize: 16, TTA: TTAMirrorTranslate}
	s.Checkpoint.Dir = dir
	s.Record.Params = map[string]string{"recipe": "airbench94", "model": "cnn", "batch": "8", "epochs": "0.75", "seed": "46"}
	return s, Env{Train: train, Test: test, Backend: labtest.Backend(t), Progress: ProgressOff}
}

// trainedHash is the SHA-256 of the variables of store but the metrics', in path order.
func trainedHash(t *testing.T, store *model.Store) string {
	vars := trainVars(t, store)
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write(vars[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// requireFixtureLogits checks logits against those a fixture recorded, within the tolerance of
// a computation that differs in the order of its sums (logitsTolerance), and the loss and
// accuracy that follow from them.
func requireFixtureLogits(t *testing.T, want [][]float32, wantLoss, wantAccuracy float64, ev *EvalResult, logits [][]float32) (tol, margin, maxDiff float64) {
	t.Helper()
	tol, margin, maxDiff = compareLogits(t, want, logits)
	require.InDelta(t, wantLoss, ev.Loss, 2*tol) // a mean of logsumexp(logits)-logit[label]
	require.Greater(t, margin, 2*tol, "a top-two margin of the recorded logits is within the tolerance")
	require.Equal(t, wantAccuracy, ev.Accuracy)
	return tol, margin, maxDiff
}

// TestRecipeRunFixtureLoadsEvaluatesAndResumes: the recipe's run of format 1 (commit 4805295)
// loads with its settings, evaluates as that code evaluated it, and resumes to the weights of
// the run that code trained straight through, bit for bit on the backend and GoMLX that wrote it; the
// resumed run records format 2 (its settings in run.json and in the checkpoint).
func TestRecipeRunFixtureLoadsEvaluatesAndResumes(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(recipeRun, "want.json"))
	require.NoError(t, err)
	var want recipeRunWant
	require.NoError(t, json.Unmarshal(raw, &want))
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.CopyFS(dir, os.DirFS(recipeRun)))
	s, env := recipeRunSettings(t, dir)

	rec, err := runs.ReadRecord(dir)
	require.NoError(t, err)
	recipe, _ := rec.Settings.Value("recipe")
	steps, _ := rec.Settings.Value("steps")
	require.Equal(t, []any{0, runs.RunInterrupted, "airbench94", "6"}, []any{rec.Format, rec.Status, recipe, steps})
	require.Equal(t, map[string]string{"recipe": "airbench94", "model": "cnn", "batch": "8", "epochs": "0.75", "seed": "46"}, rec.Settings.Given,
		"format 1's params: what it was given")

	ld, err := LoadCheckpoint(dir, env.Backend)
	require.NoError(t, err)
	require.Equal(t, 1, ld.Info.Format)
	require.Equal(t, recipeRunStep, ld.Info.Step)
	require.Equal(t, []any{recipeAirbench94, "cifar10", "cnn", 10, 8, int64(46), optimizers.Optimizer(optimizers.Nesterov{LearningRate: 11.5, Momentum: 0.85,
		WeightDecay: 0.0153, BiasScaler: 64}), optimizers.Schedule{Name: optimizers.ScheduleTriangle}, 0.2, true, true, data.AugmentAltFlip, 6},
		[]any{ld.Info.Recipe, ld.Info.Data.Spec.ID(), ld.Info.Model.Arch, ld.Info.Model.Head, ld.Info.Data.BatchSize, ld.Info.Run.Seed,
			ld.Info.Optimizer, ld.Info.Schedule, ld.Info.Run.LabelSmoothing, ld.Info.Run.Lookahead, ld.Info.Data.Augment,
			ld.Info.Data.Augmentation, ld.Info.Run.Steps})
	ev, logits := fixtureLogits(t, ld, env.Test)
	requireFixtureLogits(t, want.Logits, want.Loss, want.Accuracy, ev, logits)

	res, err := Train(context.Background(), s, env)
	require.NoError(t, err)
	require.True(t, res.Resumed)
	require.Equal(t, []int{recipeRunStep, recipeRunSteps}, []int{res.StartStep, res.EndStep})
	// Its checkpoint recorded no training metrics: their moving averages count from the resume,
	// and the summary says so.
	require.Equal(t, recipeRunStep, res.TrainMetricsFrom)
	var summary strings.Builder
	require.NoError(t, res.WriteSummary(&summary))
	require.Contains(t, summary.String(), "(moving averages of the steps since the resume at step 3: its checkpoint did not record them)")
	if backend, gomlx := env.Backend.Name(), gomlxVersion(t); backend == want.Backend && gomlx == recipeRunGoMLX {
		require.Equal(t, want.Straight.Weights, trainedHash(t, res.Store), "the weights of the run trained straight through")
		require.Equal(t, want.Straight.Loss, res.Eval.Loss)
		require.Equal(t, want.Straight.Accuracy, res.Eval.Accuracy)
	} else {
		// Another backend or GoMLX orders the sums of steps 4-6 otherwise: TestRunsOf4805295LoadEvaluateAndResume
		// checks a resumed step against 4805295's within the tolerance of that reordering.
		t.Logf("the fixture's steps 1-3 were computed on %s with GoMLX %s, this resume on %s with GoMLX %s: the weights are compared "+
			"bit for bit on the fixture's backend and GoMLX only", want.Backend, recipeRunGoMLX, backend, gomlx)
		require.False(t, math.IsNaN(res.Eval.Loss) || math.IsInf(res.Eval.Loss, 0), "loss after resuming: %v", res.Eval.Loss)
	}

	rec, err = runs.ReadRecord(dir)
	require.NoError(t, err)
	require.Equal(t, runs.RecordFormat, rec.Format)
	recorded := settingsOfRecord(t, rec.Settings)
	ld, err = LoadCheckpoint(dir, env.Backend)
	require.NoError(t, err)
	require.Equal(t, settingsFormat, ld.Info.Format)
	require.Equal(t, recorded, ld.Info.Settings, "run.json and the checkpoint record the same settings")
	require.Equal(t, recipeRunSteps, recorded.Run.Steps)
	require.Equal(t, s.Optimizer, recorded.Optimizer)
}

// TestNewerFormatsRefused: a run.json, a checkpoint or settings of a format newer than this
// lab's is refused in one line that names both formats.
func TestNewerFormatsRefused(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, runs.FileName), `{"format": 4, "status": "done", "settings": ["a newer form"]}`)
	_, err := runs.ReadRecord(dir)
	var fe *runs.FormatError
	require.ErrorAs(t, err, &fe)
	require.EqualError(t, err, filepath.Join(dir, runs.FileName)+" is in format 4, newer than this lab reads (format 3): "+
		"update cifarlab (git pull, then kernel/setup.sh) to read it")

	var s Settings
	err = json.Unmarshal([]byte(`{"format": 3, "recipe": "airbench95"}`), &s)
	require.EqualError(t, err, "settings is in format 3, newer than this lab reads (format 2): update cifarlab (git pull, then kernel/setup.sh) to read it")

	ckpt := t.TempDir()
	store := model.NewStore()
	checkpoints.Params{Format: 3, Settings: "{}", Arch: "cnn"}.Set(store)
	store.RootScope().VariableWithValue("w", float32(1))
	h, err := checkpoint.Build(store).Dir(ckpt).Done()
	require.NoError(t, err)
	require.NoError(t, h.Save())
	_, err = LoadCheckpoint(ckpt, labtest.Backend(t))
	require.ErrorAs(t, err, &fe)
	require.EqualError(t, err, "checkpoint "+ckpt+" is in format 3, newer than this lab reads (format 2): update cifarlab (git pull, then kernel/setup.sh) to read it")
}
