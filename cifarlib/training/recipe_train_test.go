package training

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"
)

// recipeTestConfig is a tiny run of the airbench94 recipe's training parts (nesterov,
// triangle, label smoothing, lookahead, epochs) on model, on 96 synthetic training examples
// (12 steps of 8 per epoch): 0.6 epochs is 8 steps, with lookahead updates at step 5 and at the end.
func recipeTestConfig(t *testing.T, arch string) (Settings, Env) {
	train, test := labtest.TrainTestRecords(t, data.CIFAR10(), 96, 40, 5)
	return recipeOn(arch, 0.6, 8, 3), Env{Train: train, Test: test, Backend: labtest.Backend(t), Progress: ProgressOff}
}

// recipeOn is the airbench94 recipe on model arch (the whitening bias is its network's), for
// epochs at batch with seed, without the final evaluation.
func recipeOn(arch string, epochs float64, batch int, seed int64) Settings {
	s := Airbench94()
	s.Model.Arch, s.Run.Epochs, s.Data.BatchSize, s.Run.Seed, s.Eval.SkipFinal = arch, epochs, batch, seed, true
	if arch != cifarlib.ArchAirbench94 {
		n := s.Optimizer.(optimizers.Nesterov)
		n.WhitenBiasEpochs = 0
		s.Optimizer = n
	}
	return s
}

// checkRecipeResumedEqualsStraight checks that the resumed recipe run's variables, momentum
// buffers and lookahead EMA included, equal those of the straight run, bit for bit, and that the
// run ends on the EMA.
func checkRecipeResumedEqualsStraight(t *testing.T, straight, resumed *Trainer) {
	want, got := trainVars(t, straight.Store()), trainVars(t, resumed.Store())
	var momentum, ema int
	for path := range want {
		momentum += boolInt(strings.HasPrefix(path, "/optimizers/nesterov/cnn/"))
		ema += boolInt(strings.HasPrefix(path, "/optimizers/lookahead/cnn/"))
	}
	require.Positive(t, momentum, "momentum buffers")
	require.Positive(t, ema, "lookahead EMA")
	require.Equal(t, len(want), len(got))
	for path, value := range want {
		require.Equal(t, value, got[path], "variable %s differs between the straight and the resumed run", path)
	}
	// The run ends on the EMA: the weights equal their EMA copies.
	for path, value := range want {
		if strings.HasPrefix(path, "/cnn/") && !strings.HasSuffix(path, "avg_weight") {
			require.Equal(t, value, want["/optimizers/lookahead"+path], "%s is its EMA after the last step", path)
		}
	}
}

// TestRecipeInterruptResumeEqualsStraightRun: a recipe run interrupted after step 3 and resumed
// ends with the variables of an uninterrupted run, bit for bit: the momentum buffers and the
// lookahead EMA are in the checkpoint, and the schedule and lookahead depend on the global step.
func TestRecipeInterruptResumeEqualsStraightRun(t *testing.T) {
	cfg, env := recipeTestConfig(t, "cnn")
	straight, err := NewTrainer(cfg, env)
	require.NoError(t, err)
	require.Equal(t, 8, straight.Settings().Run.Steps)
	resA, err := straight.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, 8, resA.EndStep)
	var summary strings.Builder
	require.NoError(t, resA.WriteSummary(&summary))
	require.Contains(t, summary.String(), "\nrecipe airbench94: cnn, 8 steps at batch 8, nesterov lr 11.5 (per 1024 examples) momentum 0.85 "+
		"weight decay 0.0153 bias scaler 64, triangle schedule, label smoothing 0.2, lookahead true, altflip-translate augmentation, final TTA 2\n")

	dir := filepath.Join(t.TempDir(), "ckpt")
	interrupted, interruptedEnv := cfg, env
	interrupted.Checkpoint.Dir = dir
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interruptedEnv.OnPoint = func(p runs.HistoryPoint) error {
		if p.Step == 3 {
			cancel()
		}
		return nil
	}
	resB, err := Train(ctx, interrupted, interruptedEnv)
	require.NoError(t, err)
	require.True(t, resB.Interrupted)
	require.Equal(t, 3, resB.EndStep)

	resumedCfg := cfg
	resumedCfg.Checkpoint.Dir = dir
	resumed, err := NewTrainer(resumedCfg, env)
	require.NoError(t, err)
	resC, err := resumed.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, 3, resC.StartStep)
	require.Equal(t, 8, resC.EndStep)

	checkRecipeResumedEqualsStraight(t, straight, resumed)
	// The triangle over 8 steps (peak at int(0.23*8) = 1): the learning rate of each step, 0.2
	// times 11.5 at step 0, 11.5 at the peak, then down to 0.07 times it at step 8.
	for i, p := range resC.History.Points {
		require.Equal(t, resA.History.Points[i].Loss, p.Loss, "step %d", p.Step)
		x, factor := float64(p.Step-1), 0.2+0.8*float64(p.Step-1)
		if x >= 1 {
			factor = 1 + (0.07-1)*(x-1)/(8-1)
		}
		require.InDelta(t, 11.5*factor, p.LearningRate, 1e-5, "step %d (0-based %d)", p.Step, p.Step-1)
	}

	// A resume with another recipe setting is refused.
	other := resumedCfg
	other.Run.LabelSmoothing = 0.1
	_, err = NewTrainer(other, env)
	var me *CheckpointMismatchError
	require.ErrorAs(t, err, &me)
	require.Contains(t, err.Error(), "label smoothing: saved 0.2, requested 0.1")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestAirbench94WhiteningAndBiasFreeze trains airbench94 with nesterov and WhitenBiasEpochs 1 on
// 16 examples (2 steps of 8 per epoch): the whitening filters are those computed from the
// training images and never trained, and the whitening bias trains in steps 1-2 and stays put
// in step 3, which runs as a resume from step 2's checkpoint.
func TestAirbench94WhiteningAndBiasFreeze(t *testing.T) {
	spec := data.CIFAR10()
	train, _ := labtest.TrainTestRecords(t, spec, 16, 8, 5)
	dir := filepath.Join(t.TempDir(), "ckpt")
	cfg := with(t, Defaults(), map[string]string{"model": "airbench94", "optimizer": "nesterov", "whiten-bias-epochs": "1", "batch": "8",
		"steps": "2", "seed": "4", "no-eval": "true", "checkpoint": dir})
	env := Env{Train: train, Backend: labtest.Backend(t), Progress: ProgressOff}
	first, err := NewTrainer(cfg, env)
	require.NoError(t, err)
	_, err = first.Run(context.Background())
	require.NoError(t, err)
	atTwo := trainVars(t, first.Store())

	cfg.Run.Steps = 3
	second, err := NewTrainer(cfg, env)
	require.NoError(t, err)
	res, err := second.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, 2, res.StartStep)
	atThree := trainVars(t, second.Store())

	const bias, filters = "/airbench94/whiten/conv/biases", cifarlib.AirbenchWhiteningVariable
	require.Equal(t, atTwo[bias], atThree[bias], "the whitening bias is frozen after 1 epoch (2 steps)")
	require.NotEqual(t, make([]byte, len(atTwo[bias])), atTwo[bias], "it trained in the first epoch")
	conv := "/airbench94/block1/conv1/conv/weights"
	require.NotEqual(t, atTwo[conv], atThree[conv], "the other weights train on")

	fresh := model.NewStore()
	require.NoError(t, second.Model().InitWhitening(fresh, train))
	want := trainVars(t, fresh)
	require.Equal(t, want[filters], atThree[filters], "the filters are the data's, untrained")
}

// TestRecipeDevicesSameAsOneDevice: the recipe's training parts (nesterov, whose gradients
// come accumulated over the devices, the triangle, label smoothing and lookahead, with updates
// at step 5 and at the end) on 4 devices follow the loss curve of one device, within the
// devices tests' bound (XLA CPU only, as the other multi-device tests).
func TestRecipeDevicesSameAsOneDevice(t *testing.T) {
	backend := devicesTestBackend(t, 4)
	trainRecs, _ := labtest.TrainTestRecords(t, data.CIFAR10(), 64, 8, 3)
	var curves [][]runs.HistoryPoint
	for _, n := range []int{1, 4} {
		s := recipeOn(cifarlib.ArchCNN, 0, devicesBatch, 7)
		s.Run.Steps, s.Compute.Devices, s.Record.HistoryEvery = 6, n, 1
		res, err := Train(context.Background(), s, Env{Backend: backend, Train: trainRecs, Progress: ProgressOff})
		require.NoError(t, err)
		curves = append(curves, res.History.Points)
	}
	requireSameLossCurve(t, curves[0], curves[1], testenv.KinkTolerance(devicesBatch, devicesMinHW))
}

// TestShortLookaheadRunSaysItLearnsNothing: with the lookahead on, a run of fewer than 5 steps
// ends on its initial weights (as airbench's does); it is trained (a smoke test of the recipe
// is legitimate), and says, before it trains (Trainer.Warnings) and in its summary, that it
// learns nothing and what to change. A run of 5 steps says nothing.
func TestShortLookaheadRunSaysItLearnsNothing(t *testing.T) {
	s, env := recipeTestConfig(t, "linear")
	s.Run.Epochs = 0.3 // 4 steps of 8
	tr, err := NewTrainer(s, env)
	require.NoError(t, err)
	require.Equal(t, 4, tr.Settings().Run.Steps)
	want := "this run learns nothing: with the lookahead on, a run of 4 steps ends on its initial weights (the lookahead first averages " +
		"the weights at step 5 and the run ends on that average); train at least 5 steps (more epochs, or a smaller batch), " +
		"or leave the recipe's lookahead out (Run.Lookahead false, the setting lookahead=false)"
	require.Equal(t, []string{want}, tr.Warnings())
	res, err := tr.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{want}, res.Warnings)
	// It ends on its initial weights: another learning rate ends on the same ones.
	other := s
	n := other.Optimizer.(optimizers.Nesterov)
	n.LearningRate = 1
	other.Optimizer = n
	res2, err := Train(context.Background(), other, env)
	require.NoError(t, err)
	weights := func(store *model.Store) map[string][]byte {
		w := trainVars(t, store)
		for path := range w {
			// The optimiser's state, the step and the fed hyper-parameters (optimizers.Scalar, which
			// hold each run's own learning rate) are not weights.
			if strings.HasPrefix(path, "/optimizers") || strings.Contains(path, "global_step") || strings.HasPrefix(path, "/hyper/") {
				delete(w, path)
			}
		}
		return w
	}
	require.NotEmpty(t, weights(tr.Store()))
	require.Equal(t, weights(tr.Store()), weights(res2.Store), "the run ends on its initial weights")
	var summary strings.Builder
	require.NoError(t, res.WriteSummary(&summary))
	require.Contains(t, summary.String(), "\nWARNING: "+want+"\n")

	s.Run.Epochs = 0.4 // 5 steps
	five, err := NewTrainer(s, env)
	require.NoError(t, err)
	require.Equal(t, 5, five.Settings().Run.Steps)
	require.Empty(t, five.Warnings())
	s.Run.Epochs, s.Run.Steps, s.Run.Lookahead = 0, 3, false // no lookahead: it learns
	off, err := NewTrainer(s, env)
	require.NoError(t, err)
	require.Empty(t, off.Warnings())
}
