package training

import (
	"fmt"
	"strconv"
	"strings"
)

// DescribeRecipe says in one line what c trains with under its Recipe: the recipe's values
// for the fields c leaves at zero, c's own where it sets them (as Train resolves them), e.g.
//
//	airbench94: model airbench94, 9.9 epochs, batch 1024, nesterov (lr 11.5, momentum 0.85, weight decay 0.0153, bias scaler 64), triangle schedule, label smoothing 0.2, lookahead, whitening bias trained for 3 epochs, augmentation altflip-translate, TTA mirror+translate
//
// A config without a Recipe, or with an unknown one, is a *ConfigError.
func DescribeRecipe(c Config) (string, error) {
	if strings.TrimSpace(c.Recipe) == "" {
		return "", &ConfigError{Field: "Recipe", Value: `""`, Reason: "DescribeRecipe describes a recipe: name one of " + strings.Join(Recipes(), ", ")}
	}
	if err := applyRecipe(&c); err != nil {
		return "", err
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	parts := []string{"model " + c.Model}
	if c.Steps > 0 {
		parts = append(parts, fmt.Sprintf("%d steps", c.Steps))
	} else {
		parts = append(parts, num(c.Epochs)+map[bool]string{true: " epoch", false: " epochs"}[c.Epochs == 1])
	}
	parts = append(parts, fmt.Sprintf("batch %d", c.BatchSize))
	opt := []string{"lr " + num(c.LearningRate)}
	for _, o := range []struct {
		name  string
		value float64
	}{{"momentum", c.Momentum}, {"weight decay", c.WeightDecay}, {"bias scaler", c.BiasScaler}} {
		if o.value != 0 {
			opt = append(opt, o.name+" "+num(o.value))
		}
	}
	parts = append(parts, fmt.Sprintf("%s (%s)", c.Optimizer, strings.Join(opt, ", ")), c.Schedule+" schedule")
	if c.LabelSmoothing > 0 {
		parts = append(parts, "label smoothing "+num(c.LabelSmoothing))
	}
	if c.Lookahead {
		parts = append(parts, "lookahead")
	}
	if c.WhitenBiasEpochs > 0 {
		parts = append(parts, fmt.Sprintf("whitening bias trained for %d epochs", c.WhitenBiasEpochs))
	}
	if c.Augment {
		parts = append(parts, "augmentation "+c.Augmentation.String())
	}
	if c.TTA > 0 {
		parts = append(parts, "TTA "+ttaName(c.TTA))
	}
	if c.Precision != "" {
		parts = append(parts, "precision "+string(c.Precision))
	}
	return c.Recipe + ": " + strings.Join(parts, ", "), nil
}
