package training

import (
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/stretchr/testify/require"
)

// TestLookaheadMatchesAirbench runs the lookahead update after "steps" that set a weight and a
// running mean to the fixture's values, and compares the state after each step with airbench's
// LookaheadState in its training loop (testdata/recipe/gen.py): updates at steps 5 and 10, and
// the final one at step 12, after which the weights are the EMA. The same float32 operations
// in the same order (PyTorch's CPU lerp), so the tolerance is a few units of float32 rounding
// of values below 3: 1e-6.
func TestLookaheadMatchesAirbench(t *testing.T) {
	fx := loadAirbenchFixture(t).Lookahead
	backend := labtest.Backend(t)
	store := model.NewStore()
	names := []string{"w", "running_mean"}
	paths := map[string]string{"w": "/m/conv/weights", "running_mean": "/m/norm1/mean"}
	for _, n := range names {
		store.VariableWithValue(paths[n], toFloat32(fx.Start[n]))
	}
	store.VariableWithValue("/m/norm1/avg_weight", float32(7)) // a count: never averaged
	store.VariableWithValue("/other/x", float32(3))            // not the model's
	la := withLookahead(nil, "/m/", fx.Total)
	exec, err := model.NewExec(backend, store, func(scope *model.Scope, w, mean *graph.Node) {
		g := w.Graph()
		for i, n := range names {
			v := store.GetVariable(paths[n])
			v.NodeValue(g)
			v.SetNodeValue([]*graph.Node{w, mean}[i])
		}
		for _, p := range []string{"/m/norm1/avg_weight", "/other/x"} {
			v := store.GetVariable(p)
			v.SetNodeValue(graph.OnePlus(v.NodeValue(g)))
		}
		optimizer.IncrementGlobalStep(g, dtypes.Float32)
		la.update(store, g)
	})
	require.NoError(t, err)
	for step := range fx.Total {
		_, err := exec.Exec(tensors.FromValue(toFloat32(fx.Trained[step]["w"])), tensors.FromValue(toFloat32(fx.Trained[step]["running_mean"])))
		require.NoError(t, err)
		for _, n := range names {
			got := store.GetVariable(paths[n]).MustValue().Value().([]float32)
			for i, want := range fx.Result[step][n] {
				require.InDelta(t, want, got[i], 1e-6, "step %d, %s[%d]", step+1, n, i)
			}
		}
	}
	require.Equal(t, float32(7+fx.Total), store.GetVariable("/m/norm1/avg_weight").MustValue().Value())
	require.Equal(t, float32(3+fx.Total), store.GetVariable("/other/x").MustValue().Value())
	// Steps 1-4 keep the trained values; step 5 does not (the test can fail).
	require.Equal(t, fx.Trained[3]["w"], fx.Result[3]["w"])
	require.NotEqual(t, fx.Trained[4]["w"], fx.Result[4]["w"])
	require.NotNil(t, store.GetVariable(lookaheadScope+paths["w"]), "the EMA is a variable, saved in checkpoints")
}
