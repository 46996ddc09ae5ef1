package training

import (
	"errors"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"

	"github.com/stretchr/testify/require"
)

// resolved resolves s as a Trainer does, with a training split of examples examples.
func resolved(s Settings, examples int) (*plan, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	p, err := resolve(s, nil)
	if err != nil {
		return nil, err
	}
	return p, p.count(examples)
}

// with returns s with the named settings set (Settings.Apply), as the CLI's flags set them.
func with(t *testing.T, s Settings, values map[string]string) Settings {
	t.Helper()
	require.NoError(t, s.Apply(values))
	return s
}

// recipeView is what TestResolveRecipe compares of a plan.
type recipeView struct {
	Model        string
	BatchSize    int
	Optimizer    optimizers.Optimizer
	Schedule     string
	Smoothing    float64
	Lookahead    bool
	TTA          int
	Epochs       float64
	Steps        int
	Augment      bool
	Augmentation data.Augmentation
}

func viewOf(p *plan) recipeView {
	return recipeView{p.Model.Arch, p.Data.BatchSize, p.Optimizer, p.Schedule.Name, p.Run.LabelSmoothing, p.Run.Lookahead, p.Eval.TTA,
		p.Run.Epochs, p.Run.Steps, p.Data.Augment, p.Data.Augmentation}
}

// TestResolveRecipe checks the recipe's settings and that fields set after it win (also to their
// zero: an ablation), on a training split of 50000 examples (airbench's).
func TestResolveRecipe(t *testing.T) {
	const size = 50000
	nesterov := optimizers.Nesterov{LearningRate: 11.5, Momentum: 0.85, WeightDecay: 0.0153, BiasScaler: 64, WhitenBiasEpochs: 3}
	airbench := recipeView{Model: "airbench94", BatchSize: 1024, Optimizer: nesterov, Schedule: optimizers.ScheduleTriangle, Smoothing: 0.2,
		Lookahead: true, TTA: 2, Epochs: 9.9, Steps: 476, // ceil(9.9 * (50000/1024 = 48))
		Augment: true, Augmentation: data.AugmentAltFlip}
	steps10 := func(s Settings) Settings { return with(t, s, map[string]string{"steps": "10"}) }
	cases := []struct {
		name string
		s    Settings
		want recipeView
	}{
		{"recipe", Airbench94(), airbench},
		{"recipe with steps", with(t, Defaults(), map[string]string{"recipe": " AirBench94 ", "steps": "2"}),
			func() recipeView { v := airbench; v.Epochs, v.Steps = 0, 2; return v }()},
		{"explicit fields win", func() Settings {
			s := Airbench94()
			n := s.Optimizer.(optimizers.Nesterov)
			n.LearningRate, n.Momentum, n.WhitenBiasEpochs = 5, 0.9, 0
			s.Model.Arch, s.Data.BatchSize, s.Optimizer, s.Schedule.Name = "cnn", 64, n, optimizers.ScheduleConstant
			s.Run.LabelSmoothing, s.Eval.TTA, s.Run.Epochs, s.Data.Augmentation = 0.1, 0, 2, data.AugmentCropFlip
			return s
		}(), recipeView{Model: "cnn", BatchSize: 64, Optimizer: optimizers.Nesterov{LearningRate: 5, Momentum: 0.9, WeightDecay: 0.0153, BiasScaler: 64},
			Schedule: optimizers.ScheduleConstant, Smoothing: 0.1, Lookahead: true, Epochs: 2, Steps: 2 * 781, Augment: true, Augmentation: data.AugmentCropFlip}},
		{"another optimizer takes its own defaults", with(t, Airbench94(), map[string]string{"optimizer": "adam", "steps": "10"}),
			recipeView{Model: "airbench94", BatchSize: 1024, Optimizer: optimizers.Adam{LearningRate: 0.001}, Schedule: optimizers.ScheduleTriangle,
				Smoothing: 0.2, Lookahead: true, TTA: 2, Steps: 10, Augment: true, Augmentation: data.AugmentAltFlip}},
		{"nesterov without the recipe", with(t, Defaults(), map[string]string{"optimizer": "Nesterov", "steps": "10"}),
			recipeView{Model: defaultModel, BatchSize: defaultBatchSize, Optimizer: optimizers.Nesterov{LearningRate: 11.5, Momentum: 0.85,
				WeightDecay: 0.0153, BiasScaler: 64}, Schedule: optimizers.ScheduleConstant, Steps: 10, Augmentation: data.AugmentCropFlip}},
		{"the parts on their own", with(t, Defaults(), map[string]string{"schedule": "triangle", "label-smoothing": "0.3", "lookahead": "true",
			"tta": "1", "epochs": "0.5", "batch": "100", "augment": "true", "augmentation": "altflip-translate"}),
			recipeView{Model: defaultModel, BatchSize: 100, Optimizer: optimizers.Adam{LearningRate: 0.001}, Schedule: optimizers.ScheduleTriangle,
				Smoothing: 0.3, Lookahead: true, TTA: 1, Epochs: 0.5, Steps: 250, Augment: true, Augmentation: data.AugmentAltFlip}},
		{"an ablation: the recipe's settings set to zero", with(t, Airbench94(), map[string]string{"steps": "10", "label-smoothing": "0",
			"lookahead": "false", "whiten-bias-epochs": "0", "tta": "0", "augment": "false", "momentum": "0", "weight-decay": "0"}),
			recipeView{Model: "airbench94", BatchSize: 1024, Optimizer: optimizers.Nesterov{LearningRate: 11.5, BiasScaler: 64}, Schedule: optimizers.ScheduleTriangle,
				Steps: 10, Augmentation: data.AugmentAltFlip}},
		{"no recipe: today's defaults", steps10(Defaults()),
			recipeView{Model: defaultModel, BatchSize: defaultBatchSize, Optimizer: optimizers.Adam{LearningRate: 0.001},
				Schedule: optimizers.ScheduleConstant, Steps: 10, Augmentation: data.AugmentCropFlip}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := resolved(c.s, size)
			require.NoError(t, err)
			require.Equal(t, c.want, viewOf(p))
		})
	}

}

// TestResolveRecipeErrors checks the errors of the recipe's settings, on a training split of
// 50000 examples (airbench's).
func TestResolveRecipeErrors(t *testing.T) {
	const size = 50000
	steps10 := func(s Settings) Settings { return with(t, s, map[string]string{"steps": "10"}) }
	nesterov := optimizers.Nesterov{LearningRate: 11.5, Momentum: 0.85, WeightDecay: 0.0153, BiasScaler: 64}
	nesterovWith := func(edit func(*optimizers.Nesterov)) Settings {
		s := steps10(Defaults())
		n := nesterov
		edit(&n)
		s.Optimizer = n
		return s
	}
	errCases := []struct {
		name  string
		s     Settings
		field string
		msg   string
	}{
		{"both", func() Settings { s := steps10(Defaults()); s.Run.Epochs = 1; return s }(), "Run.Steps/Run.Epochs", "Steps or Epochs, not both"},
		{"neither", Defaults(), "Run.Steps", "(Steps > 0) or of epochs (Epochs > 0)"},
		{"negative epochs", func() Settings { s := Defaults(); s.Run.Epochs = -1; return s }(), "Run.Epochs", "use a number > 0"},
		{"unknown recipe", func() Settings { s := steps10(Defaults()); s.Recipe = "airbench96"; return s }(), "Recipe", `one of airbench94`},
		{"momentum of 1", nesterovWith(func(n *optimizers.Nesterov) { n.Momentum = 1 }), "Optimizer.Momentum", "in [0, 1)"},
		{"whitening without the network", nesterovWith(func(n *optimizers.Nesterov) { n.WhitenBiasEpochs = 3 }), "Optimizer.WhitenBiasEpochs", "no whitening layer"},
		{"label smoothing", func() Settings { s := steps10(Defaults()); s.Run.LabelSmoothing = 1; return s }(), "Run.LabelSmoothing", "in [0, 1)"},
		{"tta", func() Settings { s := steps10(Defaults()); s.Eval.TTA = 3; return s }(), "Eval.TTA", "2 (mirror and translate)"},
		{"augmentation", func() Settings {
			s := steps10(Defaults())
			s.Data.Augment, s.Data.Augmentation = true, "cutout"
			return s
		}(),
			"Data.Augmentation", `use crop-flip or altflip-translate`},
		{"triangle warm-up", with(t, steps10(Defaults()), map[string]string{"schedule": "triangle", "warmup": "2"}), "Schedule.Name", "the triangle has its own"},
		{"epoch without a full batch", with(t, Defaults(), map[string]string{"epochs": "1", "batch": "60000"}), "Data.BatchSize", "at most 50000"},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := resolved(c.s, size)
			var ce *ConfigError
			require.True(t, errors.As(err, &ce), "%v", err)
			require.Equal(t, c.field, ce.Field)
			require.ErrorContains(t, err, c.msg)
		})
	}

	// Momentum is nesterov's: the table refuses it for another optimizer.
	s := steps10(Defaults())
	err := s.Apply(map[string]string{"momentum": "0.9"})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "Optimizer.Momentum", ce.Field)
	require.ErrorContains(t, err, `momentum needs Optimizer "nesterov"`)

	// resolve reads nothing: a run's length in epochs waits for the split's size (count).
	p, err := resolve(with(t, Defaults(), map[string]string{"epochs": "1"}), nil)
	require.NoError(t, err)
	require.Zero(t, p.Run.Steps)
	require.NoError(t, p.count(64))
	require.Equal(t, 2, p.Run.Steps)
}
