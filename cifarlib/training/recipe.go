package training

// Recipes: named functions returning Settings, which a caller overrides field by field.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"
)

// recipeAirbench94 is the name of Airbench94.
const recipeAirbench94 = "airbench94"

// recipes are the named recipes.
var recipes = map[string]func() Settings{recipeAirbench94: Airbench94}

// Airbench94 returns Keller Jordan's airbench94 (airbench 0.1.8 from PyPI, lib_airbench94.py's
// hyp and utils.py's train), 94% on CIFAR-10 in 9.9 epochs: its network, batch 1024, Nesterov
// SGD (lr 11.5 per 1024 examples, momentum 0.85, weight decay 0.0153, bias scaler 64, the
// whitening bias frozen after 3 epochs), the triangle schedule, label smoothing 0.2, lookahead,
// the alternating-flip augmentation and a final TTA of level 2; the rest is Defaults'.
func Airbench94() Settings {
	s := Defaults()
	s.Recipe = recipeAirbench94
	s.Model.Arch = cifarlib.ArchAirbench94
	s.Run.Epochs = 9.9
	s.Data.BatchSize = 1024
	n, _ := optimizers.New((optimizers.Nesterov{}).Algorithm()) // airbench94's hyp.opt
	nesterov := n.(optimizers.Nesterov)
	nesterov.WhitenBiasEpochs = 3
	s.Optimizer = nesterov
	s.Schedule.Name = optimizers.ScheduleTriangle
	s.Run.LabelSmoothing = 0.2
	s.Run.Lookahead = true
	s.Eval.TTA = TTAMirrorTranslate
	s.Data.Augment, s.Data.Augmentation = true, data.AugmentAltFlip
	return s
}

// Recipes lists the recipes' names.
func Recipes() []string { return slices.Sorted(maps.Keys(recipes)) }

// Recipe returns the settings of the recipe called name (any case, spaces around it ignored),
// Defaults for "", or a *ConfigError of Recipe.
func Recipe(name string) (Settings, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return Defaults(), nil
	}
	r, ok := recipes[name]
	if !ok {
		return Settings{}, &ConfigError{Field: "Recipe", Value: fmt.Sprintf("%q", name), Reason: "use \"\" (none) or one of " + strings.Join(Recipes(), ", ")}
	}
	return r(), nil
}

// DescribeRecipe says in one line what s trains with under its Recipe, before the run, as the
// run's summary says it after (its "recipe ..." line), e.g.
//
//	recipe airbench94: airbench94, 9.9 epochs at batch 1024, nesterov lr 11.5 (per 1024 examples) momentum 0.85 weight decay 0.0153 bias scaler 64, whitening bias frozen after 3 epochs, triangle schedule, label smoothing 0.2, lookahead true, altflip-translate augmentation, final TTA 2
//
// Settings without a Recipe, or with an unknown one, are a *ConfigError.
func DescribeRecipe(s Settings) (string, error) {
	if strings.TrimSpace(s.Recipe) == "" {
		return "", &ConfigError{Field: "Recipe", Value: `""`, Reason: "DescribeRecipe describes a recipe: name one of " + strings.Join(Recipes(), ", ")}
	}
	if _, err := Recipe(s.Recipe); err != nil {
		return "", err
	}
	return "recipe " + strings.ToLower(strings.TrimSpace(s.Recipe)) + ": " + recipeSettings(&s, 0), nil
}

// recipeSettings says, in one line, the settings of s that a recipe decides (for the summary,
// and DescribeRecipe before the run, whose length may still be in epochs). stepsPerEpoch is the
// steps of an epoch of the run's data, 0 when not known yet: the whitening bias's freeze is said
// as it happens in the run described (never, when the run ends before it).
func recipeSettings(s *Settings, stepsPerEpoch int) string {
	length := fmt.Sprintf("%d steps", s.Run.Steps)
	if s.Run.Steps == 0 {
		length = fmt.Sprintf("%g epochs", s.Run.Epochs)
	}
	out := fmt.Sprintf("%s, %s at batch %d, %s lr %g", s.Model.Arch, length, s.Data.BatchSize, algorithm(s.Optimizer), learningRate(s.Optimizer))
	if n, ok := s.Optimizer.(optimizers.Nesterov); ok {
		out += fmt.Sprintf(" (per 1024 examples) momentum %g weight decay %g bias scaler %g", n.Momentum, n.WeightDecay, n.BiasScaler)
		if n.WhitenBiasEpochs > 0 {
			out += ", " + whitenBiasFreeze(s, n.WhitenBiasEpochs, stepsPerEpoch)
		}
	}
	out += fmt.Sprintf(", %s schedule, label smoothing %g, lookahead %t", s.Schedule.Name, s.Run.LabelSmoothing, s.Run.Lookahead)
	if s.Data.Augment {
		out += ", " + s.Data.Augmentation.String() + " augmentation"
	}
	return out + fmt.Sprintf(", final TTA %d", s.Eval.TTA)
}

// whitenBiasFreeze says when the whitening bias of a run of s freezes, after epochs epochs of
// stepsPerEpoch steps (0: not known): never, when the run ends first (the bias then trains
// throughout).
func whitenBiasFreeze(s *Settings, epochs, stepsPerEpoch int) string {
	frozen := fmt.Sprintf("whitening bias frozen after %d epochs", epochs)
	switch {
	case s.Run.Steps == 0 && s.Run.Epochs <= float64(epochs):
		return fmt.Sprintf("whitening bias trained throughout (the run's %g epochs end before its freeze after %d)", s.Run.Epochs, epochs)
	case s.Run.Steps > 0 && stepsPerEpoch > 0 && s.Run.Steps <= epochs*stepsPerEpoch:
		return fmt.Sprintf("whitening bias trained throughout (the run's %d steps end before its freeze after %d epochs, step %d)",
			s.Run.Steps, epochs, epochs*stepsPerEpoch)
	case s.Run.Steps > 0 && stepsPerEpoch > 0:
		return frozen + fmt.Sprintf(" (step %d)", epochs*stepsPerEpoch)
	case s.Run.Steps > 0:
		return frozen + ", if the run's steps last that long"
	}
	return frozen
}

// warnings says what makes a run of p learn nothing though it trains: with the lookahead on,
// a run of fewer than optimizers.LookaheadEvery steps ends on its initial weights, as airbench's does (a
// recipe run of 1 epoch of 5000 images at batch 1024 is 4 steps). Such a run is not refused: it
// is a legitimate smoke test of the recipe (does it compile and run, how fast); the run says it
// before it trains (Trainer.Warnings) and in its summary, and `cifarlab runs` marks its
// accuracy as chance level.
func (p *plan) warnings() []string {
	if !p.Run.Lookahead || p.Run.Steps >= optimizers.LookaheadEvery {
		return nil
	}
	off := "turn the lookahead off (Run.Lookahead false, the setting lookahead=false)"
	if p.Recipe != "" {
		off = "leave the recipe's lookahead out (Run.Lookahead false, the setting lookahead=false)"
	}
	return []string{fmt.Sprintf("this run learns nothing: with the lookahead on, a run of %d steps ends on its initial weights "+
		"(the lookahead first averages the weights at step %d and the run ends on that average); train at least %d steps "+
		"(more epochs, or a smaller batch), or %s", p.Run.Steps, optimizers.LookaheadEvery, optimizers.LookaheadEvery, off)}
}
