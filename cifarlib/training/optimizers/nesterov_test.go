package optimizers

import (
	"math"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"
)

// TestNesterovMatchesTorchSGD runs the nesterov optimizer for the fixture's steps under the
// triangle schedule, on a batch-norm bias, a weight and a whitening bias frozen after 3 steps,
// with the gradients PyTorch's torch.optim.SGD(nesterov=True) got in airbench's param groups
// (testdata/recipe/gen.py), and compares every value after every step with PyTorch's.
//
// The tolerance: each step rounds each value in about 10 float32 operations (u = 2^-24 each,
// relative to the largest term, |p| + lr*|g| <= about 10 here), and the momentum carries the
// rounding of earlier steps with a factor below 1/(1-0.85): 6 steps * 10 ops * 7 * u * 10
// = 2.5e-4 is the worst case; 1e-5 absolute holds with the errors' random signs.
func TestNesterovMatchesTorchSGD(t *testing.T) {
	fx := loadAirbenchFixture(t).Nesterov
	backend := labtest.Backend(t)
	store := model.NewStore()
	names := []string{"norm_bias", "weight", "whiten_bias"}
	paths := map[string]string{"norm_bias": "/airbench94/block1/norm1/batch_normalization/offset",
		"weight": "/airbench94/block1/conv1/conv/weights", "whiten_bias": "/airbench94/whiten/conv/biases"}
	for _, n := range names {
		store.VariableWithValue(paths[n], toFloat32(fx.Initial[n]))
	}
	require.Equal(t, groupNormBias, paramGroupOf(paths["norm_bias"]))
	require.Equal(t, groupOther, paramGroupOf(paths["weight"]))
	require.Equal(t, groupWhitenBias, paramGroupOf(paths["whiten_bias"]))
	require.Equal(t, groupNotTrained, paramGroupOf("/airbench94/block1/norm1/batch_normalization/scale"))
	require.Equal(t, groupNormBias, paramGroupOf("/resnet20/stage1/block1/bn1/batch_normalization/offset"))
	require.Equal(t, groupOther, paramGroupOf("/cnn/conv1/conv/biases"))

	opt := newNesterov(fx.LearningRate, fx.Momentum, fx.WeightDecay, fx.BiasScaler, fx.BatchSize, fx.WhitenSteps)
	tr := airbenchTriangle(fx.Steps)
	exec, err := model.NewExec(backend, store, func(scope *model.Scope, grads []*graph.Node) {
		g := grads[0].Graph()
		for _, n := range names {
			store.GetVariable(paths[n]).NodeValue(g)
		}
		tr.setLearningRate(scope, g, fx.LearningRate)
		opt.UpdateGraphWithGradients(scope, grads, dtypes.Float32)
	})
	require.NoError(t, err)
	var spread float64
	for step := range fx.Steps {
		var grads []any
		for _, n := range names {
			mean := make([]float32, len(fx.Grads[step][n])) // the trainer's loss is the batch mean
			for i, v := range fx.Grads[step][n] {
				mean[i] = float32(v / float64(fx.BatchSize))
			}
			grads = append(grads, tensors.FromValue(mean))
		}
		_, err := exec.Exec(grads...)
		require.NoError(t, err)
		for _, n := range names {
			got := store.GetVariable(paths[n]).MustValue().Value().([]float32)
			for i, want := range fx.After[step][n] {
				require.InDelta(t, want, got[i], 1e-5, "step %d, %s[%d]", step, n, i)
				spread = math.Max(spread, math.Abs(want-float64(got[i])))
			}
		}
	}
	t.Logf("spread: %.3g (tolerance 1e-5)", spread)
	// The whitening bias did not move after its 3 steps; the others did.
	require.Equal(t, fx.After[fx.WhitenSteps-1]["whiten_bias"], fx.After[fx.Steps-1]["whiten_bias"])
	require.NotEqual(t, fx.After[fx.WhitenSteps-1]["weight"], fx.After[fx.Steps-1]["weight"])
}

func toFloat32(xs []float64) []float32 {
	out := make([]float32, len(xs))
	for i, x := range xs {
		out[i] = float32(x)
	}
	return out
}
