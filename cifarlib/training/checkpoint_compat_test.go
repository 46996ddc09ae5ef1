package training

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/stretchr/testify/require"
)

// compatRun holds two runs written by the cifarlab of commit 4805295 (GoMLX v0.28.8, the last
// commit before GoMLX v0.28.16), made by checkpoint_compat_4805295.sh beside this file with that
// commit's own binary: cnn/ (optimizers.Adam) and recipe/ (the airbench94 recipe's optimiser, lookahead and
// label smoothing on the cnn), 3 steps each on synthetic CIFAR-10 (seed 45, 64 train and 32
// test records), and want.json: what that commit computed from them.
const (
	compatRun         = "testdata/run-4805295"
	compatSteps       = 3
	compatResumeSteps = 5
)

// compatSynth is the synthetic data the runs were trained and evaluated on.
var compatSynth = data.SynthOptions{Seed: 45, TrainSize: 64, TestSize: 32}

// compatWant is one run's part of want.json.
type compatWant struct {
	Accuracy float64     `json:"accuracy"`
	Loss     float64     `json:"loss"`
	Logits   [][]float32 `json:"logits"`
	// Resumed are steps 4 and 5 of a copy of the run that 4805295 resumed to step 5.
	Resumed []runs.HistoryPoint `json:"resumed"`
}

// compatSettings are the settings `cifarlab train` of 4805295 gave each run (see the script),
// and the Env of their synthetic data: resumed with them, a run continues as it would have then.
func compatSettings(t *testing.T, run, dir string) (Settings, Env) {
	spec := data.CIFAR10()
	train, err := data.SynthesizeRecords(spec, data.SplitTrain, compatSynth)
	require.NoError(t, err)
	test, err := data.SynthesizeRecords(spec, data.SplitTest, compatSynth)
	require.NoError(t, err)
	s := Defaults()
	if run == "recipe" {
		s = recipeOn(cifarlib.ArchCNN, 0, 16, 35)
		s.Eval.TTA = TTANone
	} else {
		s.Model.Arch, s.Data.BatchSize, s.Run.Seed = cifarlib.ArchCNN, 8, 34
	}
	s.Data.Spec, s.Run.Steps = spec, compatResumeSteps
	s.Eval.Every, s.Eval.BatchSize, s.Eval.SkipFinal = EvalOff, compatSynth.TestSize, true
	s.Checkpoint.Dir = dir
	return s, Env{Train: train, Test: test, Backend: labtest.Backend(t), Progress: ProgressOff}
}

// TestRunsOf4805295LoadEvaluateAndResume: runs written before the upgrade to GoMLX v0.28.16 load,
// evaluate to the same logits (within the reordering tolerance of the cnn, logitsTolerance), loss
// and accuracy as 4805295 computed, and resume: from step 3, their first resumed step sees the
// same weights, optimiser state and batch as 4805295's resumed copy did (the same batch loss
// within the same tolerance), and they reach step 5 with a history that continues theirs.
func TestRunsOf4805295LoadEvaluateAndResume(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(compatRun, "want.json"))
	require.NoError(t, err)
	var want struct {
		Commit, GoMLX, Backend string
		TestRecords            int        `json:"test_records"`
		CNN                    compatWant `json:"cnn"`
		Recipe                 compatWant `json:"recipe"`
	}
	require.NoError(t, json.Unmarshal(raw, &want))
	require.Equal(t, "4805295", want.Commit)
	require.Equal(t, compatSynth.TestSize, want.TestRecords)
	for run, w := range map[string]compatWant{"cnn": want.CNN, "recipe": want.Recipe} {
		t.Run(run, func(t *testing.T) {
			require.Len(t, w.Logits, compatSynth.TestSize)
			dir := filepath.Join(t.TempDir(), run)
			require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join(compatRun, run))))
			cfg, env := compatSettings(t, run, dir)
			ld, err := LoadCheckpoint(dir, env.Backend)
			require.NoError(t, err)
			require.Equal(t, cifarlib.ArchCNN, ld.Info.Model.Arch)
			require.Equal(t, compatSteps, ld.Info.Step)
			require.Len(t, ld.History.Points, compatSteps)
			old := append([]runs.HistoryPoint(nil), ld.History.Points...)

			ev, logits := fixtureLogits(t, ld, env.Test)
			tol, margin, maxDiff := requireFixtureLogits(t, w.Logits, w.Loss, w.Accuracy, ev, logits)
			t.Logf("%s: written by %s (gomlx %s, %s), read on %s: largest difference %.3g, tolerance %.3g, smallest top-two margin %.3g",
				run, want.Commit, want.GoMLX, want.Backend, env.Backend.Name(), maxDiff, tol, margin)

			checkCompatResume(t, run, cfg, env, w, old, tol)
		})
	}
}

// compareLogits requires got within logitsTolerance of want, element by element, and returns the
// tolerance, the smallest gap between the two largest logits of a row of want, and the largest
// difference found.
func compareLogits(t *testing.T, want, got [][]float32) (tol, margin, maxDiff float64) {
	t.Helper()
	scale := 0.0
	margin = math.Inf(1)
	for _, row := range want {
		top, second := math.Inf(-1), math.Inf(-1)
		for _, v := range row {
			scale = math.Max(scale, math.Abs(float64(v)))
			if x := float64(v); x > top {
				top, second = x, top
			} else if x > second {
				second = x
			}
		}
		margin = math.Min(margin, top-second)
	}
	tol = logitsTolerance(scale)
	require.Len(t, got, len(want))
	for i := range want {
		require.InDeltaSlice(t, want[i], got[i], tol, "logits of test example %d", i)
		for j := range want[i] {
			maxDiff = math.Max(maxDiff, math.Abs(float64(want[i][j]-got[i][j])))
		}
	}
	return tol, margin, maxDiff
}

// resumeRun resumes the run of cfg in env from its checkpoint at step from to cfg.Run.Steps, and
// checks that it did: its end step and a History to it.
func resumeRun(t *testing.T, cfg Settings, env Env, from int) *Result {
	t.Helper()
	trainer, err := NewTrainer(cfg, env)
	require.NoError(t, err)
	step, ok := trainer.Resumed()
	require.True(t, ok)
	require.Equal(t, from, step)
	res, err := trainer.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, cfg.Run.Steps, res.EndStep)
	require.Len(t, res.History.Points, cfg.Run.Steps)
	return res
}

// checkCompatResume resumes the run of settings cfg (its History at step 3 old) to step 5, and
// checks it against w: the history continues old, and step 4's batch loss is 4805295's within
// tol (the evaluation's tolerance).
func checkCompatResume(t *testing.T, run string, cfg Settings, env Env, w compatWant, old []runs.HistoryPoint, tol float64) {
	res := resumeRun(t, cfg, env, compatSteps)
	require.Equal(t, old, res.History.Points[:compatSteps], "the resumed history continues the run's")
	require.Len(t, w.Resumed, compatResumeSteps-compatSteps)
	first := res.History.Points[compatSteps]
	require.Equal(t, w.Resumed[0].Step, first.Step)
	require.Equal(t, w.Resumed[0].LearningRate, first.LearningRate)
	// Step 4's loss is the forward pass of the checkpoint's weights on the resumed batch:
	// the same computation as an evaluation's, within its tolerance.
	require.InDelta(t, w.Resumed[0].Loss, first.Loss, 2*tol, "step 4's batch loss: 4805295 resumed it to %v", w.Resumed[0].Loss)
	require.Equal(t, w.Resumed[0].BatchAccuracy, first.BatchAccuracy, "step 4's batch accuracy")
	last := res.History.Points[compatResumeSteps-1]
	require.False(t, math.IsNaN(last.Loss) || math.IsInf(last.Loss, 0), "loss at step %d: %v", last.Step, last.Loss)
	t.Logf("%s: step 4 loss %.7g (4805295: %.7g), step 5 loss %.7g (4805295: %.7g)", run,
		first.Loss, w.Resumed[0].Loss, last.Loss, w.Resumed[1].Loss)
}
