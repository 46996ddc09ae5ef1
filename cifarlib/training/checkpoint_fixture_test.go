package training

import (
	"context"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
)

// fixtureRun is the run written by the GoMLX version of its name (testdata/run-v0.28.3): a cnn
// trained 3 steps at batch 8 on the synthetic records of fixtureConfig, with its checkpoint,
// run.json and History, and fixtureWant (want.json): the logits of the checkpoint on the fixed
// synthetic test split as that version computed them.
const (
	fixtureRun         = "testdata/run-v0.28.3"
	fixtureGoMLX       = "v0.28.3"
	fixtureSteps       = 3
	fixtureTestRecords = 32
)

var writeFixture = flag.Bool("write-fixture", false, "write "+fixtureRun+" (only with GoMLX "+fixtureGoMLX+")")

// fixtureWant is want.json: what the fixture's checkpoint computed when it was written.
type fixtureWant struct {
	GoMLX    string      `json:"gomlx"`
	Backend  string      `json:"backend"`
	Accuracy float64     `json:"accuracy"`
	Loss     float64     `json:"loss"`
	Logits   [][]float32 `json:"logits"`
}

// fixtureConfig is the run of the fixture: its records are synthesized from a seed, so the
// test regenerates them.
func fixtureConfig(t *testing.T, dir string) Config {
	spec := data.CIFAR10()
	train, test := labtest.TrainTestRecords(t, spec, 64, fixtureTestRecords, 34)
	return Config{Spec: spec, TrainRecords: train, TestRecords: test, Model: cifarlib.ArchCNN, Steps: fixtureSteps,
		BatchSize: 8, Seed: 34, EvalEvery: EvalOff, EvalBatchSize: fixtureTestRecords,
		Backend: labtest.Backend(t), Progress: ProgressOff, CheckpointDir: dir}
}

// gomlxVersion is the version of GoMLX the module requires (a test binary's build info lists
// no dependencies).
func gomlxVersion(t *testing.T) string {
	raw, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	mf, err := modfile.ParseLax("go.mod", raw, nil)
	require.NoError(t, err)
	for _, r := range mf.Require {
		if r.Mod.Path == "github.com/gomlx/gomlx" {
			return r.Mod.Version
		}
	}
	t.Fatal("go.mod does not require github.com/gomlx/gomlx")
	return ""
}

// fixtureLogits evaluates ld on the fixture's test split: its EvalResult and its logits.
func fixtureLogits(t *testing.T, ld *LoadedCheckpoint, cfg Config) (*EvalResult, [][]float32) {
	res, err := ld.Evaluate(context.Background(), cfg.TestRecords, EvalOptions{BatchSize: fixtureTestRecords})
	require.NoError(t, err)
	b, err := cfg.TestRecords.Batch(0, fixtureTestRecords)
	require.NoError(t, err)
	lt, err := ld.Logits(b.Images)
	require.NoError(t, err)
	var logits [][]float32
	tensors.ConstFlatData(lt, func(flat []float32) {
		w := lt.Shape().Dimensions[1]
		for i := 0; i < len(flat); i += w {
			logits = append(logits, append([]float32(nil), flat[i:i+w]...))
		}
	})
	return res, logits
}

// TestWriteCheckpointFixture writes testdata/run-v0.28.3 with -write-fixture; it refuses with
// another GoMLX: the fixture is what that version wrote.
func TestWriteCheckpointFixture(t *testing.T) {
	if !*writeFixture {
		t.Skip("writes " + fixtureRun + " only with -write-fixture")
	}
	require.Equal(t, fixtureGoMLX, gomlxVersion(t), "the fixture is a run written by GoMLX %s", fixtureGoMLX)
	dir := filepath.Join(t.TempDir(), "run")
	cfg := fixtureConfig(t, dir)
	cfg.SkipFinalEval = true
	res, err := Train(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, fixtureSteps, res.EndStep)
	ld, err := LoadCheckpoint(dir, cfg.Backend)
	require.NoError(t, err)
	ev, logits := fixtureLogits(t, ld, cfg)
	want := fixtureWant{GoMLX: fixtureGoMLX, Backend: cfg.Backend.Name(), Accuracy: ev.Accuracy, Loss: ev.Loss, Logits: logits}
	out, err := json.MarshalIndent(want, "", " ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "want.json"), out, 0o644))
	require.NoError(t, os.RemoveAll(fixtureRun))
	require.NoError(t, os.CopyFS(fixtureRun, os.DirFS(dir)))
}

// logitsTolerance bounds the difference between two float32 computations of the cnn's logits
// that differ only in the order of their sums (another backend or GoMLX version): each of its
// dot products of K terms is within γ_K = K·u/(1-K·u) of the exact sum relative to the sum of
// the terms' magnitudes (Higham, Accuracy and Stability of Numerical Algorithms, §3.1), and the
// errors of the layers add up: fan-ins 3·3·3, 3·3·16, 3·3·32 and the head's 4·4·64. Both
// computations may err that much in opposite directions (twice the bound), relative to scale,
// the largest logit magnitude (at least 1), standing for the terms' magnitudes.
func logitsTolerance(scale float64) float64 {
	const u = 0x1p-24 // float32's unit roundoff
	k := float64(3*3*3 + 3*3*16 + 3*3*32 + 4*4*64)
	return 2 * k * u / (1 - k*u) * math.Max(1, scale)
}

// TestCheckpointFixtureLoadsEvaluatesAndResumes loads the run GoMLX v0.28.3 wrote, checks its
// logits on the same synthetic test split against those it computed then (so the checkpoint's
// variables are read as they were written), and resumes training it.
func TestCheckpointFixtureLoadsEvaluatesAndResumes(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(fixtureRun, "want.json"))
	require.NoError(t, err)
	var want fixtureWant
	require.NoError(t, json.Unmarshal(raw, &want))
	require.Len(t, want.Logits, fixtureTestRecords)

	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.CopyFS(dir, os.DirFS(fixtureRun)))
	cfg := fixtureConfig(t, dir)
	ld, err := LoadCheckpoint(dir, cfg.Backend)
	require.NoError(t, err)
	require.Equal(t, cifarlib.ArchCNN, ld.Info.Model)
	require.Equal(t, fixtureSteps, ld.Info.Step)
	require.Len(t, ld.History.Points, fixtureSteps)

	ev, logits := fixtureLogits(t, ld, cfg)
	tol, margin, maxDiff := compareLogits(t, want.Logits, logits)
	t.Logf("logits written by %s on %s, read on %s: largest difference %.3g, tolerance %.3g, smallest top-two margin %.3g",
		want.GoMLX, want.Backend, cfg.Backend.Name(), maxDiff, tol, margin)
	// The loss is a mean of logsumexp(logits)-logit[label]: each term moves by at most 2·tol.
	require.InDelta(t, want.Loss, ev.Loss, 2*tol)
	require.False(t, math.IsNaN(ev.Accuracy))
	// No arg-max can change within tol when every top-two margin exceeds 2·tol.
	require.Greater(t, margin, 2*tol, "a top-two margin of the recorded logits is within the tolerance")
	require.Equal(t, want.Accuracy, ev.Accuracy)

	cfg.Steps = fixtureSteps + 2
	cfg.SkipFinalEval = false
	trainer, err := NewTrainer(cfg)
	require.NoError(t, err)
	step, ok := trainer.Resumed()
	require.True(t, ok)
	require.Equal(t, fixtureSteps, step)
	res, err := trainer.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, fixtureSteps+2, res.EndStep)
	require.Len(t, res.History.Points, fixtureSteps+2)
	require.False(t, math.IsNaN(res.Eval.Loss) || math.IsInf(res.Eval.Loss, 0), "loss after resuming: %v", res.Eval.Loss)
}
