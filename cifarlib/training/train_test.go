package training

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"
)

func TestTrainConfigErrors(t *testing.T) {
	base := Defaults()
	base.Run.Steps = 10
	for _, c := range []struct {
		name  string
		edit  func(*Settings)
		field string
		msg   string
	}{
		{"no spec", func(s *Settings) { s.Data.Spec = data.Spec{} }, "Data.Spec",
			"training: config: Data.Spec=(zero): set it to CIFAR10(), CIFAR100(LabelsFine) or CIFAR100(LabelsCoarse)"},
		{"no steps", func(s *Settings) { s.Run.Steps = 0 }, "Run.Steps",
			"training: config: Run.Steps=0: set the number of training steps (Steps > 0) or of epochs (Epochs > 0)"},
		{"negative head", func(s *Settings) { s.Model.Head = -1 }, "Model.Head",
			"training: config: Model.Head=-1: use a whole number > 0 or 0 (the dataset's classes)"},
		{"negative batch", func(s *Settings) { s.Data.BatchSize = -4 }, "Data.BatchSize",
			"training: config: Data.BatchSize=-4: use a whole number > 0"},
		{"optimizer", func(s *Settings) { s.Optimizer = nil }, "Optimizer",
			`training: config: Optimizer=nil: set an optimizer, e.g. training.DefaultAdam() (Defaults') or training.NewOptimizer("sgd")`},
		{"schedule", func(s *Settings) { s.Schedule.Name = "step" }, "Schedule.Name",
			`training: config: Schedule.Name="step": use constant, cosine or triangle`},
		{"warmup without cosine", func(s *Settings) { s.Schedule.WarmupSteps = 5 }, "Schedule.Name",
			"training: config: Schedule.Name=constant: WarmupSteps and MinLearningRate need Schedule \"cosine\""},
		{"warmup too long", func(s *Settings) { s.Schedule.Name, s.Schedule.WarmupSteps = optimizers.ScheduleCosine, 10 }, "Schedule.WarmupSteps",
			"training: config: Schedule.WarmupSteps=10: use 0 <= WarmupSteps < Steps (10)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := base
			c.edit(&s)
			_, err := NewTrainer(s, Env{})
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, c.field, ce.Field)
			require.EqualError(t, err, c.msg)
		})
	}
	// The optimizer's name and weight decay, as flags and sweeps set them.
	err := base.Apply(map[string]string{"optimizer": "lion"})
	require.EqualError(t, err, `training: config: Optimizer="lion": use one of adam, adamw, adamax, rmsprop, sgd, nesterov`)
	err = base.Apply(map[string]string{"weight-decay": "0.01"})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "Optimizer.WeightDecay", ce.Field)
	require.EqualError(t, err, `training: config: Optimizer.WeightDecay=0.01: weight decay needs Optimizer "adamw" or "nesterov"`)

}

// The defaults a run's plan takes for what the settings leave as Defaults gives them.
func TestResolveDefaults(t *testing.T) {
	s := with(t, Defaults(), map[string]string{"dataset": "cifar100", "steps": "1000", "optimizer": "SGD"})
	cfg, err := resolved(s, 50000)
	require.NoError(t, err)
	require.Equal(t, "cnn", cfg.Model.Arch)
	require.Equal(t, 32, cfg.Data.BatchSize)
	require.Equal(t, "sgd", cfg.Optimizer.Algorithm())
	require.Equal(t, 0.1, learningRate(cfg.Optimizer))
	require.Equal(t, optimizers.ScheduleConstant, cfg.Schedule.Name)
	require.Equal(t, 5, cfg.Record.HistoryEvery)
	require.Equal(t, 5, cfg.Record.LogEvery)
	require.Equal(t, 2, cfg.Checkpoint.Keep)
	require.Equal(t, 100, cfg.Eval.BatchSize)
	require.Equal(t, 5, cfg.TopK())
	require.Equal(t, 0, (&Settings{Data: DataSettings{Spec: data.CIFAR10()}}).TopK())
}

// The seed's bug: a 10-class head on CIFAR-100. With the guard on, NewTrainer fails with the
// static guard's error before anything is loaded (the data folder does not even exist).
func TestTrainStaticGuardStopsBeforeFirstStep(t *testing.T) {
	b := labtest.Backend(t)
	missing := filepath.Join(t.TempDir(), "no-data-here")
	s := Defaults()
	s.Data.Spec, s.Data.Dir, s.Model.Arch, s.Model.Head, s.Run.Steps = data.CIFAR100(data.LabelsFine), missing, cifarlib.ArchCNN, 10, 5
	res, err := Train(context.Background(), s, Env{Backend: b, Progress: ProgressOff})
	require.Nil(t, res)
	var hm *cifarlib.HeadMismatchError
	require.ErrorAs(t, err, &hm)
	require.True(t, errors.Is(err, cifarlib.ErrHeadMismatch))
	require.Equal(t, &cifarlib.HeadMismatchError{Dataset: "cifar100", HeadWidth: 10, NumClasses: 100, Overridden: true}, hm)
	require.EqualError(t, err, "model head has 10 outputs but dataset cifar100 has 100 classes (head overridden to 10): "+
		"build the model with cifarlib's factory for cifar100, or set the head to 100")
	_, statErr := os.Stat(missing)
	require.True(t, errors.Is(statErr, os.ErrNotExist))
}

// outOfRangeSeen counts the examples, and those with a label >= 10, of the first steps batches
// of train in the order a run of batch and seed takes them.
func outOfRangeSeen(t *testing.T, train *data.Records, batch int, seed int64, steps int) (seen, bad int64) {
	ds, err := data.NewDataset("expected", train, data.DatasetOptions{BatchSize: batch, Shuffle: true, Seed: seed, DropRemainder: true})
	require.NoError(t, err)
	for hb, err := range ds.HostBatches() {
		require.NoError(t, err)
		for _, l := range hb.Labels {
			seen++
			if l >= 10 {
				bad++
			}
		}
		if hb.Number == steps-1 {
			break
		}
	}
	return seen, bad
}

// labelsAtLeast counts the labels >= n.
func labelsAtLeast[L int32 | uint8 | int](labels []L, n L) int {
	count := 0
	for _, l := range labels {
		if l >= n {
			count++
		}
	}
	return count
}

// With the guard off, the same bug trains silently; the result counts the examples that
// contributed exactly zero loss.
func TestTrainUnguardedCountsZeroLossExamples(t *testing.T) {
	b := labtest.Backend(t)
	spec := data.CIFAR100(data.LabelsFine)
	train, test := labtest.TrainTestRecords(t, spec, 320, 100, 3)
	const steps, batch, seed = 5, 32, 11
	var log bytes.Buffer
	s := Defaults()
	s.Data.Spec, s.Model = spec, ModelSettings{Arch: cifarlib.ArchLinear, Head: 10, Unguarded: true}
	s.Run.Steps, s.Data.BatchSize, s.Run.Seed = steps, batch, seed
	res, err := Train(context.Background(), s, Env{Train: train, Test: test, Backend: b, Progress: ProgressOff, Log: &log})
	require.NoError(t, err)

	// Expected: the labels >= 10 among the examples of the first 5 batches of the same data order.
	seen, bad := outOfRangeSeen(t, train, batch, seed, steps)
	splitBad := labelsAtLeast(train.Labels(), 10)
	require.Equal(t, int64(steps*batch), seen)
	require.Greater(t, bad, int64(steps*batch/2), "synthetic CIFAR-100 labels are spread over 100 classes")
	require.Equal(t, ZeroLossStats{HeadWidth: 10, Seen: seen, OutOfRange: bad, SplitExamples: 320, SplitOutOfRange: splitBad}, res.ZeroLoss)
	require.False(t, res.Guarded)
	require.Equal(t, steps, res.EndStep)

	var summary bytes.Buffer
	require.NoError(t, res.WriteSummary(&summary))
	require.Contains(t, summary.String(), "with UNGUARDED plain loss")
	require.Contains(t, summary.String(), "\ndata: synthetic cifar100, 320 train / 100 test images\n", "the summary says what the run was trained on")
	require.Contains(t, summary.String(), "zero-loss examples: "+res.ZeroLoss.String()+"\n")
	require.Contains(t, res.ZeroLoss.String(), " of 160 training examples seen (")
	require.Contains(t, summary.String(), "WARNING: ")

	// The evaluation cannot predict those classes either.
	require.Equal(t, labelsAtLeast(test.Labels(), 10), res.Eval.OutOfRange)
	require.Len(t, res.Eval.PerClass, 100)
	require.Len(t, res.Eval.Confusion[0], 10)
	for _, c := range res.Eval.PerClass[10:] {
		require.Zero(t, c.Correct)
	}
	require.Contains(t, log.String(), "step 5/5: loss ")
}

// trainVars returns the values of all variables of a store except the metrics' accumulators.
func trainVars(t *testing.T, store *model.Store) map[string][]byte {
	t.Helper()
	vars := map[string][]byte{}
	for v := range store.IterVariables() {
		if strings.HasPrefix(v.Path(), "/metrics/") {
			continue
		}
		value, err := v.Value()
		require.NoError(t, err)
		require.NoError(t, value.ConstBytes(func(data []byte) { vars[v.Path()] = slices.Clone(data) }))
	}
	return vars
}

// SIGINT in-process: the context is cancelled after step 2 of 4; the checkpoint is saved and a
// new run resumes from it. The parameters (and optimizer state) then equal, bit for bit, those of
// a run trained straight through for the same 4 steps.
func TestTrainInterruptResumeEqualsStraightRun(t *testing.T) {
	b := labtest.Backend(t)
	spec := data.CIFAR10()
	train, test := labtest.TrainTestRecords(t, spec, 96, 40, 5)
	cfg := Defaults()
	cfg.Data.Spec, cfg.Model.Arch, cfg.Run.Steps, cfg.Data.BatchSize, cfg.Run.Seed = spec, cifarlib.ArchCNN, 4, 8, 7
	cfg.Data.Augment, cfg.Optimizer, cfg.Schedule = true, optimizers.AdamW{LearningRate: 0.003, WeightDecay: 0.004}, optimizers.Schedule{Name: optimizers.ScheduleCosine, WarmupSteps: 1}
	cfg.Eval.SkipFinal = true
	env := Env{Train: train, Test: test, Backend: b, Progress: ProgressOff}

	straight, err := NewTrainer(cfg, env)
	require.NoError(t, err)
	resA, err := straight.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, 4, resA.EndStep)
	require.False(t, resA.Interrupted)

	dir := filepath.Join(t.TempDir(), "ckpt")
	interruptAtStep2(t, cfg, env, dir)
	resumedCfg, resumedEnv := cfg, env
	resumedCfg.Checkpoint.Dir = dir
	var log bytes.Buffer
	resumedEnv.Log = &log
	resumed, err := NewTrainer(resumedCfg, resumedEnv)
	require.NoError(t, err)
	step, ok := resumed.Resumed()
	require.True(t, ok)
	require.Equal(t, 2, step)
	resC, err := resumed.Run(context.Background())
	require.NoError(t, err)
	require.True(t, resC.Resumed)
	require.Equal(t, 2, resC.StartStep)
	require.Equal(t, 4, resC.EndStep)
	require.Equal(t, int64(16), resC.ZeroLoss.Seen)
	require.True(t, strings.HasPrefix(log.String(), "resumed from checkpoint "+dir+" at step 2 of 4\n"), log.String())

	checkResumedEqualsStraight(t, straight, resumed, resA, resC)
	checkSavedEvaluates(t, dir, resumed, test)
}

// interruptAtStep2 trains cfg into dir, cancelled after step 2 as SIGINT does, and checks what
// it saved.
func interruptAtStep2(t *testing.T, cfg Settings, env Env, dir string) {
	interrupted, interruptedEnv := cfg, env
	interrupted.Checkpoint.Dir = dir
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interruptedEnv.OnPoint = func(p runs.HistoryPoint) error {
		if p.Step == 2 {
			cancel() // What cifarlab train does on SIGINT.
		}
		return nil
	}
	var log bytes.Buffer
	interruptedEnv.Log = &log
	resB, err := Train(ctx, interrupted, interruptedEnv)
	require.NoError(t, err)
	require.True(t, resB.Interrupted)
	require.Equal(t, 0, resB.StartStep)
	require.Equal(t, 2, resB.EndStep)
	require.Nil(t, resB.Eval)
	require.Contains(t, log.String(), "interrupted: checkpoint saved at step 2 in "+dir+"\n")
	files, err := filepath.Glob(filepath.Join(dir, "checkpoint-*-step-00000002.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	hist, err := runs.LoadHistory(dir)
	require.NoError(t, err)
	require.Len(t, hist.Points, 2)
}

// checkResumedEqualsStraight checks that the resumed run's variables and history equal, bit for
// bit, those of the run trained straight through.
func checkResumedEqualsStraight(t *testing.T, straight, resumed *Trainer, resA, resC *Result) {
	want, got := trainVars(t, straight.Store()), trainVars(t, resumed.Store())
	require.Contains(t, want, "/global_step")
	require.Contains(t, want, "/cnn/head/dense/weights")
	require.Equal(t, len(want), len(got))
	for path, value := range want {
		require.Equal(t, value, got[path], "variable %s differs between the straight and the resumed run", path)
	}

	// The history continues across the resume, and its per-step losses, learning rates and
	// moving averages (the training metrics, carried over in the checkpoint) are those of the
	// straight run, as is the summary's.
	require.Len(t, resC.History.Points, 4)
	for i, p := range resC.History.Points {
		require.Equal(t, i+1, p.Step)
		require.Equal(t, resA.History.Points[i].Loss, p.Loss, "step %d", p.Step)
		require.Equal(t, resA.History.Points[i].LearningRate, p.LearningRate, "step %d", p.Step)
		require.Equal(t, resA.History.Points[i].MovingLoss, p.MovingLoss, "step %d", p.Step)
		require.Equal(t, resA.History.Points[i].Accuracy, p.Accuracy, "step %d", p.Step)
	}
	require.Equal(t, []float64{resA.MovingLoss, resA.Accuracy}, []float64{resC.MovingLoss, resC.Accuracy})
	require.Zero(t, resC.TrainMetricsFrom)
	// Cosine schedule with 1 warm-up step: 0 at step 1 (warm-up starts at 0), then the peak,
	// then down along the cosine over the remaining 3 steps.
	require.Equal(t, 0.0, resA.History.Points[0].LearningRate)
	require.InDelta(t, 0.003, resA.History.Points[1].LearningRate, 1e-9)
	require.InDelta(t, 0.003*(1+math.Cos(math.Pi/3))/2, resA.History.Points[2].LearningRate, 1e-9)
}

// checkSavedEvaluates checks that evaluating the checkpoint saved in dir (as cifarlab eval
// does) gives the resumed model's results.
func checkSavedEvaluates(t *testing.T, dir string, resumed *Trainer, test *data.Records) {
	b := resumed.Env().Backend
	ck, err := LoadCheckpoint(dir, b)
	require.NoError(t, err)
	require.Equal(t, []any{dir, 4, "cifar10", "fine", "cnn", 10, 8, int64(7), true, optimizers.Optimizer(optimizers.AdamW{LearningRate: 0.003, WeightDecay: 0.004}),
		optimizers.Schedule{Name: "cosine", WarmupSteps: 1}, 4}, []any{ck.Info.Dir, ck.Info.Step, ck.Info.Data.Spec.Name, ck.Info.Data.Spec.Labels.String(),
		ck.Info.Model.Arch, ck.Info.Model.Head, ck.Info.Data.BatchSize, ck.Info.Run.Seed, ck.Info.Data.Augment, ck.Info.Optimizer,
		ck.Info.Schedule, ck.Info.Run.Steps})
	require.Len(t, ck.History.Points, 4)
	fromCkpt, err := Evaluate(context.Background(), b, ck.Model, ck.Store, test, EvalOptions{})
	require.NoError(t, err)
	fromTrainer, err := resumed.Evaluate(context.Background(), test, EvalOptions{})
	require.NoError(t, err)
	require.NotNil(t, fromCkpt.Timeline)
	fromTrainer.Timeline, fromCkpt.Timeline = nil, nil // each evaluation has its own
	require.Equal(t, fromTrainer, fromCkpt)
	require.Equal(t, 40, fromCkpt.Examples)
}

func TestTrainResumeRefusesDifferentSettings(t *testing.T) {
	b := labtest.Backend(t)
	spec := data.CIFAR10()
	train, _ := labtest.TrainTestRecords(t, spec, 64, 10, 1)
	dir := t.TempDir()
	cfg := Defaults()
	cfg.Data.Spec, cfg.Model.Arch, cfg.Run.Steps, cfg.Data.BatchSize, cfg.Eval.SkipFinal, cfg.Checkpoint.Dir = spec, cifarlib.ArchLinear, 1, 16, true, dir
	env := Env{Train: train, Backend: b, Progress: ProgressOff}
	_, err := Train(context.Background(), cfg, env)
	require.NoError(t, err)

	other := cfg
	other.Run.Seed, other.Data.BatchSize, other.Run.Steps = 3, 8, 2
	_, err = NewTrainer(other, env)
	var me *CheckpointMismatchError
	require.ErrorAs(t, err, &me)
	require.Equal(t, []string{"batch size: saved 16, requested 8", "seed: saved 0, requested 3"}, me.Diffs)
	require.EqualError(t, err, "training: checkpoint "+dir+" was saved by a run with different settings (batch size: saved 16, "+
		"requested 8; seed: saved 0, requested 3): resume with the same settings, or use a new checkpoint directory")

	// Asking for no more steps than the checkpoint has trains nothing.
	res, err := Train(context.Background(), cfg, env)
	require.NoError(t, err)
	require.True(t, res.Resumed)
	require.Equal(t, 1, res.StartStep)
	require.Equal(t, 0, res.StepsRun())
}

func TestTopKAccuracyGraph(t *testing.T) {
	b := labtest.Backend(t)
	logits := tensors.FromValue([][]float32{
		{0, 1, 2, 3, 4, 5, 6}, // label 6: rank 0
		{0, 1, 2, 3, 4, 5, 6}, // label 2: 4 larger -> hit for k=5
		{0, 1, 2, 3, 4, 5, 6}, // label 1: 5 larger -> miss
		{3, 3, 3, 3, 3, 3, 3}, // label 0: all tied -> hit
		{0, 1, 2, 3, 4, 5, 6}, // label 7: out of range -> miss
		{0, 1, 2, 3, 4, 5, 6}, // label -1: out of range -> miss
	})
	labels := tensors.FromValue([][]int32{{6}, {2}, {1}, {0}, {7}, {-1}})
	hits, err := model.CallOnce(b, model.NewStore(), func(_ *model.Scope, labels, logits *graph.Node) *graph.Node {
		return topKHits(labels, logits, 5)
	}, labels, logits)
	require.NoError(t, err)
	require.Equal(t, []float32{1, 1, 0, 1, 0, 0}, hits.Value())
	mean, err := model.CallOnce(b, model.NewStore(), func(s *model.Scope, labels, logits *graph.Node) *graph.Node {
		return topKAccuracyGraph(1)(s, []*graph.Node{labels}, []*graph.Node{logits})
	}, labels, logits)
	require.NoError(t, err)
	require.InDelta(t, 2.0/6, mean.Value(), 1e-7) // k=1: row 0 (6 is the max) and row 3 (tie).
}

// Guard errors reach the caller as the guard's own error, not inside GoMLX's loop messages.
func TestTrainGuardErrorUnwrapped(t *testing.T) {
	host := &data.LabelRangeError{Batch: 3, BatchSize: 2, NumClasses: 10, Bad: []data.BadLabel{{Position: 1, Example: 7, Label: 12}}}
	wrapped := fmt.Errorf("Loop.RunEpochs(1): failed reading from Dataset (LoopStep=3): %w",
		fmt.Errorf("data: dataset \"train\" batch 3 (epoch 0): %w", host))
	require.Same(t, host, cifarlib.GuardErrorOf(wrapped))
	device := &cifarlib.DeviceLabelError{Step: 4, NumBad: 1, BatchSize: 8, NumClasses: 10}
	require.Same(t, device, cifarlib.GuardErrorOf(fmt.Errorf("train.Loop.OnStep(hook %q): %w", "guard", device)))
	other := errors.New("batch loss is NaN, training interrupted")
	require.Same(t, other, cifarlib.GuardErrorOf(other))
	require.NoError(t, cifarlib.GuardErrorOf(nil))
}

func TestTrainRecordsMustMatchSpec(t *testing.T) {
	train, _ := labtest.TrainTestRecords(t, data.CIFAR100(data.LabelsFine), 40, 10, 1)
	s := Defaults()
	s.Run.Steps, s.Eval.SkipFinal = 1, true
	_, err := NewTrainer(s, Env{Train: train, Backend: labtest.Backend(t)})
	require.EqualError(t, err, "training: config: Env.Train/Env.Test=cifar100: the records are cifar100 (100 classes) "+
		"but Data.Spec is cifar10 (10 classes): load them with the same Spec")
}
