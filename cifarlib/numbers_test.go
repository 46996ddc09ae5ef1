package cifarlib

import (
	"math"
	"testing"

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
