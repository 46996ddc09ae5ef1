package training

import (
	"errors"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/stretchr/testify/require"
)

// TestResolveRecipe checks the recipe's defaults, that explicit fields win, and the errors of
// the recipe's fields, on a training split of 50000 examples (airbench's).
func TestResolveRecipe(t *testing.T) {
	size := func(*Config) (int, error) { return 50000, nil }
	airbench := Config{Model: "airbench94", BatchSize: 1024, Optimizer: OptimizerNesterov, LearningRate: 11.5, Momentum: 0.85,
		WeightDecay: 0.0153, BiasScaler: 64, WhitenBiasEpochs: 3, Schedule: ScheduleTriangle, LabelSmoothing: 0.2,
		Lookahead: true, TTA: 2, Epochs: 9.9, Steps: 476, // ceil(9.9 * (50000/1024 = 48))
		Augment: true, Augmentation: data.AugmentAltFlip}
	cases := []struct {
		name string
		cfg  Config
		want Config // the fields compared below
	}{
		{"recipe", Config{Recipe: "airbench94"}, airbench},
		{"recipe with steps", Config{Recipe: " AirBench94 ", Steps: 2}, func() Config { c := airbench; c.Epochs, c.Steps = 0, 2; return c }()},
		{"explicit fields win", Config{Recipe: RecipeAirbench94, Model: "cnn", BatchSize: 64, LearningRate: 5, Momentum: 0.9, Schedule: ScheduleConstant,
			LabelSmoothing: 0.1, TTA: TTAOff, Epochs: 2, Augmentation: "crop-flip"},
			Config{Model: "cnn", BatchSize: 64, Optimizer: OptimizerNesterov, LearningRate: 5, Momentum: 0.9, WeightDecay: 0.0153, BiasScaler: 64,
				Schedule: ScheduleConstant, LabelSmoothing: 0.1, Lookahead: true, Epochs: 2, Steps: 2 * 781, Augment: true, Augmentation: data.AugmentCropFlip}},
		{"another optimizer takes its own defaults", Config{Recipe: RecipeAirbench94, Optimizer: "adam", Steps: 10},
			Config{Model: "airbench94", BatchSize: 1024, Optimizer: "adam", LearningRate: DefaultLearningRate, Schedule: ScheduleTriangle,
				LabelSmoothing: 0.2, Lookahead: true, TTA: 2, Steps: 10, Augment: true, Augmentation: data.AugmentAltFlip}},
		{"nesterov without the recipe", Config{Optimizer: "Nesterov", Steps: 10},
			Config{Model: DefaultModel, BatchSize: DefaultBatchSize, Optimizer: OptimizerNesterov, LearningRate: 11.5, Momentum: 0.85,
				WeightDecay: 0.0153, BiasScaler: 64, Schedule: ScheduleConstant, Steps: 10, Augmentation: data.AugmentCropFlip}},
		{"the parts on their own", Config{Schedule: "triangle", LabelSmoothing: 0.3, Lookahead: true, TTA: 1, Epochs: 0.5, BatchSize: 100,
			Augment: true, Augmentation: data.AugmentAltFlip},
			Config{Model: DefaultModel, BatchSize: 100, Optimizer: DefaultOptimizer, LearningRate: DefaultLearningRate, Schedule: ScheduleTriangle,
				LabelSmoothing: 0.3, Lookahead: true, TTA: 1, Epochs: 0.5, Steps: 250, Augment: true, Augmentation: data.AugmentAltFlip}},
		{"an ablation: the recipe's zero settings kept", Config{Recipe: RecipeAirbench94, Steps: 10,
			RecipeOff: []string{"LabelSmoothing", "Lookahead", "WhitenBiasEpochs", "TTA", "Augment", "Momentum", "WeightDecay"}},
			Config{Model: "airbench94", BatchSize: 1024, Optimizer: OptimizerNesterov, LearningRate: 11.5, BiasScaler: 64, Schedule: ScheduleTriangle,
				Steps: 10, Augmentation: data.AugmentAltFlip}},
		{"no recipe: today's defaults", Config{Steps: 10},
			Config{Model: DefaultModel, BatchSize: DefaultBatchSize, Optimizer: DefaultOptimizer, LearningRate: DefaultLearningRate,
				Schedule: ScheduleConstant, Steps: 10, Augmentation: data.AugmentCropFlip}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Spec = data.CIFAR10()
			p, err := resolve(c.cfg, size)
			require.NoError(t, err)
			got := Config{Model: p.Model, BatchSize: p.BatchSize, Optimizer: p.Optimizer, LearningRate: p.LearningRate, Momentum: p.Momentum,
				WeightDecay: p.WeightDecay, BiasScaler: p.BiasScaler, WhitenBiasEpochs: p.WhitenBiasEpochs, Schedule: p.Schedule,
				LabelSmoothing: p.LabelSmoothing, Lookahead: p.Lookahead, TTA: p.TTA, Epochs: p.Epochs, Steps: p.Steps,
				Augment: p.Augment, Augmentation: p.Augmentation}
			require.Equal(t, c.want, got)
		})
	}

	errCases := []struct {
		name  string
		cfg   Config
		field string
		msg   string
	}{
		{"both", Config{Steps: 5, Epochs: 1}, "Steps/Epochs", "Steps or Epochs, not both"},
		{"neither", Config{}, "Steps", "(Steps > 0) or of epochs (Epochs > 0)"},
		{"negative epochs", Config{Epochs: -1}, "Steps/Epochs", "must be positive"},
		{"unknown recipe", Config{Recipe: "airbench96", Steps: 1}, "Recipe", `one of airbench94`},
		{"momentum without nesterov", Config{Momentum: 0.9, Steps: 1}, "Momentum/BiasScaler/WhitenBiasEpochs", `settings of Optimizer "nesterov"`},
		{"momentum of 1", Config{Optimizer: OptimizerNesterov, Momentum: 1, Steps: 1}, "Momentum", "in [0, 1)"},
		{"whitening without the network", Config{Optimizer: OptimizerNesterov, WhitenBiasEpochs: 3, Steps: 1}, "WhitenBiasEpochs", "no whitening layer"},
		{"label smoothing", Config{LabelSmoothing: 1, Steps: 1}, "LabelSmoothing", "in [0, 1)"},
		{"tta", Config{TTA: 3, Steps: 1}, "TTA", "2 (mirror and translate)"},
		{"augmentation", Config{Augment: true, Augmentation: "cutout", Steps: 1}, "Augmentation", `unknown augmentation "cutout"`},
		{"triangle warm-up", Config{Schedule: ScheduleTriangle, WarmupSteps: 2, Steps: 10}, "Schedule", "the triangle has its own"},
		{"recipe off unknown", Config{Recipe: RecipeAirbench94, RecipeOff: []string{"Schedule"}}, "RecipeOff", "name fields among Momentum, "},
		{"recipe off without recipe", Config{RecipeOff: []string{"Lookahead"}, Steps: 1}, "RecipeOff", "only applies with a Recipe"},
		{"epoch without a full batch", Config{Epochs: 1, BatchSize: 60000}, "BatchSize", "at most 50000"},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Spec = data.CIFAR10()
			_, err := resolve(c.cfg, size)
			var ce *ConfigError
			require.True(t, errors.As(err, &ce), "%v", err)
			require.Equal(t, c.field, ce.Field)
			require.ErrorContains(t, err, c.msg)
		})
	}
	_, err := resolve(Config{Spec: data.CIFAR10(), Epochs: 1}, nil)
	require.ErrorContains(t, err, "the training split's size is not known here: set Steps")
	called := 0
	_, err = resolve(Config{Spec: data.CIFAR10(), Steps: 3}, func(*Config) (int, error) { called++; return 0, nil })
	require.NoError(t, err)
	require.Zero(t, called, "a plan that does not depend on the data's size does not ask for it")
}
