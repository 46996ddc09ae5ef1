package training

import (
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/stretchr/testify/require"
)

// TestDescribeRecipe: the recipe's settings in one line, as the run's summary says them, with
// the fields a config sets itself in place of the recipe's, and an error without a recipe.
func TestDescribeRecipe(t *testing.T) {
	for _, c := range []struct {
		name string
		s    Settings
		want string
	}{
		{"the recipe", Airbench94(),
			"recipe airbench94: airbench94, 9.9 epochs at batch 1024, nesterov lr 11.5 (per 1024 examples) momentum 0.85 weight decay 0.0153 bias scaler 64, " +
				"whitening bias frozen after 3 epochs, triangle schedule, label smoothing 0.2, lookahead true, altflip-translate augmentation, final TTA 2"},
		{"explicit fields win", with(t, Defaults(), map[string]string{"recipe": " AirBench94 ", "epochs": "2", "label-smoothing": "0.1", "tta": "0"}),
			"recipe airbench94: airbench94, 2 epochs at batch 1024, nesterov lr 11.5 (per 1024 examples) momentum 0.85 weight decay 0.0153 bias scaler 64, " +
				"whitening bias trained throughout (the run's 2 epochs end before its freeze after 3), triangle schedule, label smoothing 0.1, lookahead true, altflip-translate augmentation, final TTA 0"},
		{"an ablation", with(t, Airbench94(), map[string]string{"steps": "20", "lookahead": "false", "label-smoothing": "0", "momentum": "0"}),
			"recipe airbench94: airbench94, 20 steps at batch 1024, nesterov lr 11.5 (per 1024 examples) momentum 0 weight decay 0.0153 bias scaler 64, " +
				"whitening bias frozen after 3 epochs, if the run's steps last that long, triangle schedule, label smoothing 0, lookahead false, altflip-translate augmentation, final TTA 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := DescribeRecipe(c.s)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
	// The run's summary, whose steps and data are known: the freeze as it happens in the run.
	for _, c := range []struct {
		steps, stepsPerEpoch int
		want                 string
	}{
		{38, 19, "whitening bias trained throughout (the run's 38 steps end before its freeze after 3 epochs, step 57)"},
		{476, 48, "whitening bias frozen after 3 epochs (step 144)"},
	} {
		s := Airbench94()
		s.Run.Steps = c.steps
		require.Contains(t, recipeSettings(&s, c.stepsPerEpoch), ", "+c.want+", triangle schedule")
	}
	var ce *ConfigError
	_, err := DescribeRecipe(Defaults())
	require.ErrorAs(t, err, &ce)
	s := Airbench94()
	s.Recipe = "airbench99"
	_, err = DescribeRecipe(s)
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
