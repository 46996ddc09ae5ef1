package cifarlib

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"
)

// requireClose checks that got and want have the same length and agree to within tol relative to
// 1+|want| element by element (float32 sums in a different order differ in the last bits).
func requireClose(t *testing.T, want, got []float32, tol float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		diff := math.Abs(float64(got[i]-want[i])) / (1 + math.Abs(float64(want[i])))
		require.LessOrEqual(t, diff, tol, "%s[%d]: got %g, want %g", what, i, got[i], want[i])
	}
}

// sinData returns n deterministic test values scale*sin(i*freq), i = 0..n-1.
func sinData(n int, freq, scale float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(math.Sin(float64(i)*freq) * scale)
	}
	return out
}

// seededStore returns a variable store whose random initializers start from seed. Tests that
// compare two computations of the same model use it: with a random initialization, some draws put
// a pre-activation within rounding of a ReLU's kink (seed 6 of resnet20 does on XLA CPU), and the
// two computations then differ by 3e-3 instead of 1e-6, failing a run now and then.
func seededStore(t *testing.T, seed int64) *model.Store {
	t.Helper()
	store := model.NewStore()
	require.NoError(t, store.SetRNGStateFromSeed(seed))
	return store
}
