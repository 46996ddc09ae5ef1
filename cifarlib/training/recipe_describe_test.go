package training

import (
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/stretchr/testify/require"
)

// TestDescribeRecipe: the recipe's settings in one line, with the fields a config sets itself
// in place of the recipe's, and an error without a recipe.
func TestDescribeRecipe(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"the recipe", Config{Recipe: RecipeAirbench94},
			"airbench94: model airbench94, 9.9 epochs, batch 1024, nesterov (lr 11.5, momentum 0.85, weight decay 0.0153, bias scaler 64), " +
				"triangle schedule, label smoothing 0.2, lookahead, whitening bias trained for 3 epochs, augmentation altflip-translate, TTA mirror+translate"},
		{"explicit fields win", Config{Recipe: " AirBench94 ", Epochs: 1, LabelSmoothing: 0.1, TTA: TTAOff, Precision: "bf16-mixed"},
			"airbench94: model airbench94, 1 epoch, batch 1024, nesterov (lr 11.5, momentum 0.85, weight decay 0.0153, bias scaler 64), " +
				"triangle schedule, label smoothing 0.1, lookahead, whitening bias trained for 3 epochs, augmentation altflip-translate, precision bf16-mixed"},
		{"an ablation", Config{Recipe: RecipeAirbench94, Steps: 20, RecipeOff: []string{"Lookahead", "LabelSmoothing", "Momentum"}},
			"airbench94: model airbench94, 20 steps, batch 1024, nesterov (lr 11.5, weight decay 0.0153, bias scaler 64), " +
				"triangle schedule, whitening bias trained for 3 epochs, augmentation altflip-translate, TTA mirror+translate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := DescribeRecipe(c.cfg)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
	var ce *ConfigError
	_, err := DescribeRecipe(Config{Steps: 10})
	require.ErrorAs(t, err, &ce)
	_, err = DescribeRecipe(Config{Recipe: "airbench99"})
	require.ErrorAs(t, err, &ce)
	require.ErrorContains(t, err, "airbench94")
}

// TestEpochTime: an epoch's time is the steady steps' time per step (the timeline's PhaseSteps)
// times the steps of an epoch, the last partial batch dropped.
func TestEpochTime(t *testing.T) {
	origin := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tl := runs.NewTimeline(origin)
	tl.Add(runs.PhaseFirstStep, origin, origin.Add(9*time.Second)) // compiles: left out
	tl.Add(runs.PhaseSteps, origin.Add(9*time.Second), origin.Add(12*time.Second)).Count = 6
	res := &Result{BatchSize: 1024, Data: data.Provenance{TrainImages: 5000}, Timeline: tl}
	require.Equal(t, 4*500*time.Millisecond, res.EpochTime(), "0.5 s per step, 4 steps of 1024 in 5000 images")
	res.Timeline = runs.NewTimeline(origin) // a single step: no steady pace
	require.Zero(t, res.EpochTime())
	res.Timeline = nil
	require.Zero(t, res.EpochTime())
}
