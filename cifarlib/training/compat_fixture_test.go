package training

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"
)

// recipeRun is a run folder in the format of commit 4805295 (its checkpoint's settings one
// parameter each, run.json without settings): the airbench94 recipe on the cnn (nesterov,
// triangle schedule, lookahead, label smoothing, alternating-flip augmentation, 0.75 epochs of
// the 64 synthetic training images at batch 8: 6 steps, final TTA 2), interrupted after step 3.
// recipeRunWant (want.json) holds what that code computed: the checkpoint's logits on the
// synthetic test split, and the evaluation and weights of the same run trained straight to
// step 6.
const (
	recipeRun       = "testdata/run-4805295-recipe"
	recipeRunStep   = 3
	recipeRunSteps  = 6
	recipeRunImages = 32
)

var writeRecipeRun = flag.Bool("write-recipe-run", false, "write "+recipeRun+" (only with the code of its format)")

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

// recipeRunRecords are the synthetic splits of recipeRun.
func recipeRunRecords(t *testing.T) (train, test *data.Records) {
	return labtest.TrainTestRecords(t, data.CIFAR10(), 64, recipeRunImages, 46)
}

// trainedHash is the SHA-256 of the variables of store but the metrics', in path order.
func trainedHash(t *testing.T, store *model.Store) string {
	vars := trainVars(t, store)
	h := sha256.New()
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range vars {
			if !yield(k) {
				return
			}
		}
	}) {
		h.Write([]byte(k))
		h.Write(vars[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestWriteRecipeRunFixture writes testdata/run-4805295-recipe with -write-recipe-run. It
// was run once, with the code of commit 4805295's format (the commit that added it): later code
// writes another format, which is the point of the fixture.
func TestWriteRecipeRunFixture(t *testing.T) {
	if !*writeRecipeRun {
		t.Skip("writes " + recipeRun + " only with -write-recipe-run")
	}
	train, test := recipeRunRecords(t)
	cfg := Config{Recipe: RecipeAirbench94, Spec: data.CIFAR10(), TrainRecords: train, TestRecords: test, Model: cifarlib.ArchCNN,
		BatchSize: 8, Epochs: 0.75, Seed: 46, EvalEvery: 2, EvalExamples: 16, EvalBatchSize: 16, Backend: labtest.Backend(t), Progress: ProgressOff,
		Params: map[string]string{"recipe": "airbench94", "model": "cnn", "batch": "8", "epochs": "0.75", "seed": "46"}}

	straight := cfg
	straight.CheckpointDir = filepath.Join(t.TempDir(), "straight")
	res, err := Train(context.Background(), straight)
	require.NoError(t, err)
	require.Equal(t, recipeRunSteps, res.EndStep)
	want := recipeRunWant{Backend: cfg.Backend.Name()}
	want.Straight.Loss, want.Straight.Accuracy, want.Straight.Weights = res.Eval.Loss, res.Eval.Accuracy, trainedHash(t, res.Store)

	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	cut := cfg
	cut.CheckpointDir = dir
	cut.OnPoint = func(p runs.HistoryPoint) error {
		if p.Step == recipeRunStep {
			cancel()
		}
		return nil
	}
	res, err = Train(ctx, cut)
	require.NoError(t, err)
	require.True(t, res.Interrupted)
	require.Equal(t, recipeRunStep, res.EndStep)
	ld, err := LoadCheckpoint(dir, cfg.Backend)
	require.NoError(t, err)
	ev, logits := fixtureLogits(t, ld, Config{TestRecords: test})
	want.Logits, want.Loss, want.Accuracy = logits, ev.Loss, ev.Accuracy
	out, err := json.MarshalIndent(want, "", " ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "want.json"), out, 0o644))
	require.NoError(t, os.RemoveAll(recipeRun))
	require.NoError(t, os.CopyFS(recipeRun, os.DirFS(dir)))
}
