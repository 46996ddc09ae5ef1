package runs

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChanceBand: the band is three binomial standard deviations around 1/classes; the
// researcher's 9.90% on CIFAR-10's 10000 test images is inside it, a model that learned
// something is not, and a band is empty without classes or examples.
func TestChanceBand(t *testing.T) {
	b := Chance(10, 10000)
	require.InDelta(t, 0.1-0.009, b.Low, 1e-12)
	require.InDelta(t, 0.1+0.009, b.High, 1e-12)
	require.Equal(t, "1/10 = 10.00% ± 0.90 points on 10000 test images", b.String())
	for _, c := range []struct {
		acc  float64
		want bool
	}{{0.099, true}, {0.1, true}, {0.108, true}, {0.0915, true}, {0.111, false}, {0.085, false}, {0.61, false}} {
		require.Equal(t, c.want, b.Contains(c.acc), "%v", c.acc)
	}

	small := Chance(10, 1000)
	require.InDelta(t, 3*math.Sqrt(0.09/1000), (small.High-small.Low)/2, 1e-12)
	require.True(t, small.Contains(0.125))
	require.False(t, small.Contains(0.13))

	hundred := Chance(100, 10000)
	require.InDelta(t, 0.01-3*math.Sqrt(0.0099/10000), hundred.Low, 1e-12)
	require.False(t, hundred.Contains(0.02))

	tiny := Chance(10, 20) // clamped at 0
	require.Zero(t, tiny.Low)
	require.True(t, tiny.Contains(0))

	require.False(t, Chance(0, 100).Contains(0.1))
	require.False(t, Chance(10, 0).Contains(0.1))
}
