package training

// Recipes: named sets of Config settings (Config.Recipe), in this one table.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// RecipeAirbench94 is Config.Recipe "airbench94": Keller Jordan's airbench94 (airbench 0.1.8
// from PyPI, lib_airbench94.py's hyp and utils.py's train), 94% on CIFAR-10 in 9.9 epochs.
const RecipeAirbench94 = "airbench94"

// TTAOff is Config.TTA for a final evaluation without test-time augmentation, even with a Recipe.
const TTAOff = -1

// recipes are the settings of each named recipe, as a Config whose non-zero fields fill the
// zero fields of a Config that names it (see applyRecipe); Epochs applies only when neither
// Steps nor Epochs is set.
var recipes = map[string]Config{
	// lib_airbench94.py's hyp: opt (train_epochs, batch_size, lr, momentum, weight_decay,
	// bias_scaler, label_smoothing, whiten_bias_epochs), aug (flip, translate 2: alternating
	// flip), net.tta_level; utils.py's train: Nesterov SGD, triangle schedule, lookahead.
	RecipeAirbench94: {
		Model:            modelAirbench94,
		Epochs:           9.9,
		BatchSize:        1024,
		Optimizer:        OptimizerNesterov,
		LearningRate:     11.5,
		Momentum:         0.85,
		WeightDecay:      0.0153,
		BiasScaler:       64,
		WhitenBiasEpochs: 3,
		LabelSmoothing:   0.2,
		Lookahead:        true,
		Schedule:         ScheduleTriangle,
		TTA:              TTAMirrorTranslate,
		Augment:          true,
		Augmentation:     data.AugmentAltFlip,
	},
}

// modelAirbench94 is the architecture of RecipeAirbench94.
const modelAirbench94 = cifarlib.ArchAirbench94

// Recipes lists the names Config.Recipe accepts.
func Recipes() []string {
	names := make([]string, 0, len(recipes))
	for name := range recipes {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// nesterovDefaults are the settings "nesterov" takes when it is asked for without a recipe:
// airbench94's.
func nesterovDefaults() Config {
	r := recipes[RecipeAirbench94]
	return Config{LearningRate: r.LearningRate, WeightDecay: r.WeightDecay, Momentum: r.Momentum, BiasScaler: r.BiasScaler}
}

// RecipeOffFields are the Config fields whose zero value is a setting of its own (no label
// smoothing, no lookahead, ...), which Config.RecipeOff can keep at zero under a Recipe.
var RecipeOffFields = []string{"Momentum", "WeightDecay", "WhitenBiasEpochs", "LabelSmoothing", "Lookahead", "TTA", "Augment"}

// applyRecipe fills the zero fields of c from its Recipe (nothing without one), but those named
// in c.RecipeOff.
func applyRecipe(c *Config) error {
	for _, name := range c.RecipeOff {
		if !slices.Contains(RecipeOffFields, name) {
			return &ConfigError{Field: "RecipeOff", Value: fmt.Sprintf("%q", name), Reason: "name fields among " + strings.Join(RecipeOffFields, ", ")}
		}
	}
	if c.Recipe = strings.ToLower(strings.TrimSpace(c.Recipe)); c.Recipe == "" {
		if len(c.RecipeOff) > 0 {
			return &ConfigError{Field: "RecipeOff", Value: strings.Join(c.RecipeOff, ","), Reason: "it only applies with a Recipe"}
		}
		return nil
	}
	r, ok := recipes[c.Recipe]
	if !ok {
		return &ConfigError{Field: "Recipe", Value: fmt.Sprintf("%q", c.Recipe), Reason: "use \"\" (none) or one of " + strings.Join(Recipes(), ", ")}
	}
	on := func(name string) bool { return !slices.Contains(c.RecipeOff, name) }
	fillString(&c.Model, r.Model)
	fillString(&c.Optimizer, r.Optimizer)
	fillString(&c.Schedule, r.Schedule)
	fill(&c.BatchSize, r.BatchSize)
	if nameOr(c.Optimizer, "") == r.Optimizer { // another optimizer takes its own defaults
		fill(&c.LearningRate, r.LearningRate)
		fill(&c.BiasScaler, r.BiasScaler)
		fillIf(on("Momentum"), &c.Momentum, r.Momentum)
		fillIf(on("WeightDecay"), &c.WeightDecay, r.WeightDecay)
		fillIf(on("WhitenBiasEpochs") && nameOr(c.Model, "") == r.Model, &c.WhitenBiasEpochs, r.WhitenBiasEpochs)
	}
	fillIf(on("LabelSmoothing"), &c.LabelSmoothing, r.LabelSmoothing)
	fillIf(on("TTA"), &c.TTA, r.TTA)
	c.Lookahead = c.Lookahead || on("Lookahead") && r.Lookahead
	c.Augment = c.Augment || on("Augment") && r.Augment
	if c.Augmentation == "" { // an explicit scheme wins
		c.Augmentation = r.Augmentation
	}
	if c.Steps == 0 && c.Epochs == 0 {
		c.Epochs = r.Epochs
	}
	return nil
}

// warnings says what makes a run of p learn nothing though it trains: with the lookahead on,
// a run of fewer than lookaheadEvery steps ends on its initial weights, as airbench's does (a
// recipe run of 1 epoch of 5000 images at batch 1024 is 4 steps). Such a run is not refused: it
// is a legitimate smoke test of the recipe (does it compile and run, how fast); the run says it
// before it trains (Trainer.Warnings) and in its summary, and `cifarlab runs` marks its
// accuracy as chance level.
func (p *plan) warnings() []string {
	var w []string
	if c := &p.Config; c.Lookahead && c.Steps < lookaheadEvery {
		off := "turn the lookahead off (Lookahead false; on the command line, leave out --lookahead)"
		if c.Recipe != "" {
			off = "leave the recipe's lookahead out (Config.RecipeOff \"Lookahead\"; on the command line --lookahead=false)"
		}
		w = append(w, fmt.Sprintf("this run learns nothing: with the lookahead on, a run of %d steps ends on its initial weights "+
			"(the lookahead first averages the weights at step %d and the run ends on that average); train at least %d steps "+
			"(more epochs, or a smaller batch), or %s", c.Steps, lookaheadEvery, lookaheadEvery, off))
	}
	return w
}

// fillIf fills field with value (see fill) when on.
func fillIf[T int | float64](on bool, field *T, value T) {
	if on {
		fill(field, value)
	}
}

// recipeSettings says, in one line, the settings of c that a recipe decides (for the summary,
// and DescribeRecipe before the run, whose length may still be in epochs).
func recipeSettings(c *Config) string {
	length := fmt.Sprintf("%d steps", c.Steps)
	if c.Steps == 0 {
		length = fmt.Sprintf("%g epochs", c.Epochs)
	}
	s := fmt.Sprintf("%s, %s of %d, %s lr %g", c.Model, length, c.BatchSize, c.Optimizer, c.LearningRate)
	if c.Optimizer == OptimizerNesterov {
		s += fmt.Sprintf(" (per 1024 examples) momentum %g weight decay %g bias scaler %g", c.Momentum, c.WeightDecay, c.BiasScaler)
		if c.WhitenBiasEpochs > 0 {
			s += fmt.Sprintf(", whitening bias frozen after %d epochs", c.WhitenBiasEpochs)
		}
	}
	s += fmt.Sprintf(", %s schedule, label smoothing %g, lookahead %t", c.Schedule, c.LabelSmoothing, c.Lookahead)
	if c.Augment {
		s += ", " + c.Augmentation.String() + " augmentation"
	}
	return s + fmt.Sprintf(", final TTA %d", c.TTA)
}

// fill sets *field to value when it is zero.
func fill[T int | float64](field *T, value T) {
	if *field == 0 {
		*field = value
	}
}

// fillString sets *field to value when it is empty (or spaces).
func fillString(field *string, value string) {
	if strings.TrimSpace(*field) == "" {
		*field = value
	}
}
