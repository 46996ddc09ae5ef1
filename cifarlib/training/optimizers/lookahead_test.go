package optimizers

import (
	"math"
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

// TestLookaheadEndFed: the lookahead's end is fed at run time (a run of other steps reuses the
// compiled train step), and its weight is bit for bit the one the graph computed when the end was
// a constant (graph.DivScalar, which multiplies by the constant's reciprocal), at every step of
// runs of several lengths, on the test's backend (XLA folds constants; the pure-Go backend does
// not). A kept program fed another end computes that end's weights (the test can fail: the
// first end's weights differ).
func TestLookaheadEndFed(t *testing.T) {
	backend := labtest.Backend(t)
	store := model.NewStore()
	totals := []int{12, 47, 97, 476, 955, 4773}
	fed, err := model.NewExec(backend, store, func(scope *model.Scope, step *graph.Node) *graph.Node {
		return lookaheadWeight(step, lookaheadFed(totals[0])) // built at the first call: the end it holds first
	})
	require.NoError(t, err)
	defer fed.Finalize()
	var previous []float32
	for _, total := range totals {
		steps := make([]int64, total)
		for i := range steps {
			steps[i] = int64(i + 1)
		}
		constant := graph.MustNewExec(backend, func(step *graph.Node) *graph.Node {
			x := graph.DivScalar(graph.ConvertDType(step, dtypes.Float32), float64(total))
			return graph.OneMinus(graph.MulScalar(graph.Mul(x, graph.Mul(x, x)), math.Pow(0.95, LookaheadEvery)))
		})
		want := constant.MustCall(tensors.FromValue(steps))[0].Value().([]float32)
		constant.Finalize()
		require.NoError(t, SetValues(store, lookaheadFed(total)))
		out, err := fed.Exec(tensors.FromValue(steps))
		require.NoError(t, err)
		got := out[0].Value().([]float32)
		for i := range want {
			require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%d steps: the weight after step %d", total, i+1)
		}
		if previous != nil {
			require.NotEqual(t, previous, got[:len(previous)], "%d steps: the fed end changes the weights", total)
		}
		previous = got
	}
}
