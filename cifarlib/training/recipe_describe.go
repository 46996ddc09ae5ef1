package training

import "strings"

// DescribeRecipe says in one line what c trains with under its Recipe, before the run, as the
// run's summary says it after (its "recipe ..." line): the recipe's values for the fields c
// leaves at zero, c's own where it sets them, e.g.
//
//	recipe airbench94: airbench94, 9.9 epochs of 1024, nesterov lr 11.5 (per 1024 examples) momentum 0.85 weight decay 0.0153 bias scaler 64, whitening bias frozen after 3 epochs, triangle schedule, label smoothing 0.2, lookahead true, altflip-translate augmentation, final TTA 2
//
// A config without a Recipe, or with an unknown one, is a *ConfigError.
func DescribeRecipe(c Config) (string, error) {
	if strings.TrimSpace(c.Recipe) == "" {
		return "", &ConfigError{Field: "Recipe", Value: `""`, Reason: "DescribeRecipe describes a recipe: name one of " + strings.Join(Recipes(), ", ")}
	}
	if err := applyRecipe(&c); err != nil {
		return "", err
	}
	return "recipe " + c.Recipe + ": " + recipeSettings(&c), nil
}
