package main

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"

	"github.com/stretchr/testify/require"
)

// TestTrainRecipeFlags checks what the recipe's flags put in the run's settings: with --recipe,
// the flags not given leave their settings to the recipe (not their defaults), the flags given
// win, also at their zero value (an ablation).
func TestTrainRecipeFlags(t *testing.T) {
	parse := func(args ...string) (training.Settings, error) {
		fs, f := newTrainFlags(io.Discard)
		require.NoError(t, fs.Parse(args))
		return f.settings()
	}
	s, err := parse("--recipe", "airbench94")
	require.NoError(t, err)
	r := training.Airbench94()
	require.Equal(t, []any{"airbench94", data.CIFAR10(), r.Model.Arch, r.Data.BatchSize, r.Optimizer, r.Schedule.Name, 0, r.Run.Epochs},
		[]any{s.Recipe, s.Data.Spec, s.Model.Arch, s.Data.BatchSize, s.Optimizer, s.Schedule.Name, s.Run.Steps, s.Run.Epochs}, "the recipe decides")

	s, err = parse("--recipe", "airbench94", "--model", "cnn", "--batch", "8", "--steps", "2", "--optimizer", "sgd", "--schedule", "cosine",
		"--tta", "0", "--label-smoothing", "0.1", "--augmentation", "crop-flip")
	require.NoError(t, err)
	require.Equal(t, []any{"cnn", 8, "sgd", "cosine", 2, training.TTANone, 0.1, data.AugmentCropFlip},
		[]any{s.Model.Arch, s.Data.BatchSize, s.Optimizer.Algorithm(), s.Schedule.Name, s.Run.Steps, s.Eval.TTA, s.Run.LabelSmoothing, s.Data.Augmentation})

	s, err = parse("--epochs", "2.5", "--optimizer", "nesterov", "--momentum", "0.9", "--bias-scaler", "32", "--weight-decay", "0.01",
		"--whiten-bias-epochs", "2", "--model", "airbench94", "--lookahead", "--schedule", "triangle", "--augment",
		"--augmentation", "altflip-translate", "--tta", "1")
	require.NoError(t, err)
	require.Equal(t, []any{data.CIFAR10(), "airbench94", 32, optimizers.Optimizer(optimizers.Nesterov{LearningRate: 11.5, Momentum: 0.9,
		BiasScaler: 32, WeightDecay: 0.01, WhitenBiasEpochs: 2}), true, "triangle", true, data.AugmentAltFlip, 1, 2.5},
		[]any{s.Data.Spec, s.Model.Arch, s.Data.BatchSize, s.Optimizer, s.Run.Lookahead, s.Schedule.Name, s.Data.Augment,
			s.Data.Augmentation, s.Eval.TTA, s.Run.Epochs})

	// Flags given at their zero value set their settings to it, under the recipe too: an ablation.
	s, err = parse("--recipe", "airbench94", "--label-smoothing", "0", "--lookahead=false", "--tta", "0", "--augment=false", "--momentum", "0.9")
	require.NoError(t, err)
	require.Equal(t, []any{0.0, false, 0, false, 0.9}, []any{s.Run.LabelSmoothing, s.Run.Lookahead, s.Eval.TTA, s.Data.Augment,
		s.Optimizer.(optimizers.Nesterov).Momentum})
	s, err = parse("--label-smoothing", "0", "--lookahead=false", "--steps", "3")
	require.NoError(t, err)
	require.Equal(t, []any{0.0, false}, []any{s.Run.LabelSmoothing, s.Run.Lookahead}, "without --recipe, the defaults")

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--steps", "3", "--epochs", "1"}, "--steps 3 and --epochs 1: give the length of the run once, in steps or in epochs"},
		{[]string{"--recipe", "airbench99"}, `unknown --recipe "airbench99": use one of airbench94`},
	} {
		_, err := parse(c.args...)
		require.EqualError(t, inFlags(err), c.msg)
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run([]string{"train", "--steps", "3", "--label-smoothing", "1", "--backend", "go"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "--label-smoothing 1: use a number in [0, 1)")
}

// TestTrainCommandRecipe trains the airbench94 recipe for 2 steps of 8 images on synthetic data
// through the CLI, and checks what the run recorded: its settings in the checkpoint and its flags
// in run.json.
func TestTrainCommandRecipe(t *testing.T) {
	root := trainTestData(t, data.CIFAR10())
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	var stdout, stderr bytes.Buffer
	var code int
	logged := captureStderr(t, func() {
		code = run([]string{"train", "--recipe", "airbench94", "--steps", "2", "--batch", "8", "--data", root, "--backend", "go",
			"--checkpoint", ckpt, "--no-eval", "--eval-every", "-1", "--json"}, &stdout, &stderr)
	})
	require.Equal(t, 0, code, stderr.String())
	var res training.Result
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res))
	// 2 steps with the lookahead end on the initial weights: said before it trains, and recorded.
	learnsNothing := "this run learns nothing: with the lookahead on, a run of 2 steps ends on its initial weights"
	require.Contains(t, logged, "\nWARNING: "+learnsNothing, "before the first step")
	require.Less(t, strings.Index(logged, "WARNING"), strings.Index(logged, "step 1/2"))
	require.Len(t, res.Warnings, 1)
	require.True(t, strings.HasPrefix(res.Warnings[0], learnsNothing), res.Warnings[0])
	require.Equal(t, "airbench94", res.Model)
	require.Equal(t, "airbench94", res.Recipe)
	require.Equal(t, 8, res.BatchSize)
	require.Equal(t, 2, res.EndStep)
	require.Equal(t, data.KindSynthetic, res.Data.Kind)

	backend, err := backends.New(backends.Go)
	require.NoError(t, err)
	ck, err := training.LoadCheckpoint(ckpt, backend)
	require.NoError(t, err)
	info := ck.Info
	n := info.Optimizer.(optimizers.Nesterov)
	require.Equal(t, []any{"airbench94", "nesterov", 11.5, 0.85, 0.0153, 64.0, 3, "triangle", 0.2, true, true, "altflip-translate"},
		[]any{info.Recipe, n.Algorithm(), n.LearningRate, n.Momentum, n.WeightDecay, n.BiasScaler, n.WhitenBiasEpochs,
			info.Schedule.Name, info.Run.LabelSmoothing, info.Run.Lookahead, info.Data.Augment, string(info.Data.Augmentation)})
	rec, err := runs.ReadRecord(ckpt)
	require.NoError(t, err)
	require.Equal(t, "airbench94", rec.Settings.Given["recipe"])
	recipe, _ := rec.Settings.Value("recipe")
	require.Equal(t, "airbench94", recipe)
}

// A sweep of the recipe: seeds of airbench94 and label smoothing on a grid, the recipe and
// epochs shared; a task that `cifarlab train` refuses (both --steps and --epochs) is refused
// before anything is written.
func TestSweepRecipeDryRun(t *testing.T) {
	runsDir := filepath.Join(t.TempDir(), "runs")
	var stdout, stderr bytes.Buffer
	code := run([]string{"sweep", "--runs", runsDir, "--name", "ab", "--grid", "seed=1,2", "--grid", "label-smoothing=0,0.2",
		"--recipe", "airbench94", "--epochs", "2", "--local", "--dry-run"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, lines, 5, stdout.String())
	require.Contains(t, lines[3], "ab-seed_2-label-smoothing_0.2  --recipe airbench94 --epochs 2 --seed=2 --label-smoothing=0.2 ")
	require.Equal(t, "would run tasks 0-3 here, 1 at a time", lines[4])

	stderr.Reset()
	code = run([]string{"sweep", "--runs", runsDir, "--name", "ab", "--grid", "seed=1,2", "--recipe", "airbench94", "--epochs", "2",
		"--steps", "5", "--local", "--dry-run"}, &stdout, &stderr)
	require.Equal(t, 2, code)
	require.Contains(t, stderr.String(), "--steps 5 and --epochs 2: give the length of the run once")
}
