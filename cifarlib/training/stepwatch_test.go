package training

import (
	"context"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/stretchr/testify/require"
)

// TestStepWatch: a StepWatch in Train's context hears of each step as it starts, and of the end
// of the steps; a resumed run counts on from its checkpoint.
func TestStepWatch(t *testing.T) {
	s, env := recipeTestConfig(t, "linear") // 8 steps
	s.Checkpoint.Dir = t.TempDir()
	w := new(StepWatch)
	require.Equal(t, StepNow{}, w.Now())
	var seen []StepNow
	ctx, cancel := context.WithCancel(WithStepWatch(context.Background(), w))
	defer cancel()
	env.OnPoint = func(p runs.HistoryPoint) error {
		seen = append(seen, w.Now())
		if p.Step == 3 {
			cancel()
		}
		return nil
	}
	res, err := Train(ctx, s, env)
	require.NoError(t, err)
	require.True(t, res.Interrupted)
	require.Equal(t, []StepNow{{Step: 1, Target: 8}, {Step: 2, Target: 8}, {Step: 3, Target: 8}}, seen)

	w = new(StepWatch)
	seen = nil
	res, err = Train(WithStepWatch(context.Background(), w), s, env)
	require.NoError(t, err)
	require.Equal(t, 8, res.EndStep)
	require.Equal(t, StepNow{Step: 4, Target: 8}, seen[0])
	require.Equal(t, StepNow{Step: 8, Target: 8, StepsDone: true}, w.Now())
}
