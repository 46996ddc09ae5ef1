package runs

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSmooth(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		name   string
		values []float64
		weight float64
		want   []float64
	}{
		{"empty", nil, 0.9, []float64{}},
		{"no smoothing", []float64{4, 2, 1}, 0, []float64{4, 2, 1}},
		// last = 2, 2, 1.5; debiased by 1-0.5^n = 0.5, 0.75, 0.875. Every step but the last
		// division is exact in binary, and a division is correctly rounded: the results equal
		// the fractions 8/3 and 12/7 rounded once, on any IEEE-754 machine.
		{"weight 0.5", []float64{4, 2, 1}, 0.5, []float64{4, 8.0 / 3, 12.0 / 7}},
		{"first value kept", []float64{3}, 0.9, []float64{3}},
		{"constant stays constant", []float64{2, 2, 2, 2}, 0.5, []float64{2, 2, 2, 2}},
		{"not finite skipped", []float64{4, nan, 2, inf, 1}, 0.5, []float64{4, nan, 8.0 / 3, inf, 12.0 / 7}},
		{"weight below 0 is 0", []float64{4, 2}, -1, []float64{4, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Smooth(tc.values, tc.weight)
			require.Len(t, got, len(tc.want))
			for i := range tc.want {
				if math.IsNaN(tc.want[i]) {
					require.True(t, math.IsNaN(got[i]), "value %d: %v", i, got[i])
					continue
				}
				require.Equal(t, tc.want[i], got[i], "value %d", i)
			}
		})
	}
}

// TestSmoothedLossTracksFallingLoss is the issue's case: a loss falling from 4.6 to about 0.03
// over 200 steps. GoMLX's moving average (the mean of the first 100 steps, then 1% per step)
// is still several times the batch loss at step 200; the smoothed loss is within the last
// few steps' values.
func TestSmoothedLossTracksFallingLoss(t *testing.T) {
	h := &History{}
	for step := 1; step <= 200; step++ {
		h.Add(HistoryPoint{Step: step, Loss: 4.6 * math.Exp(-float64(step)/40)})
	}
	s := h.SmoothedLoss()
	require.Len(t, s, 200)
	last := h.Points[199].Loss
	// An EMA of weight w of a loss falling by a factor q per point is (1-w)/(1-w/q) times
	// today's loss: with TensorBoard's 0.6 and q = exp(-1/40), 1.040 times, the loss of 1.55
	// points ago: between the loss of 2 steps ago and today's.
	require.Greater(t, s[199], last)
	require.Less(t, s[199], h.Points[197].Loss)
	require.InDelta(t, 0.4/(1-0.6/math.Exp(-1.0/40)), s[199]/last, 1e-9, "the debiasing factor 1-0.6^200 is 1 to float64")
}

func ExampleSmooth() {
	fmt.Printf("%.4f\n", Smooth([]float64{4, 2, 1, 1}, 0.5))
	// Output: [4.0000 2.6667 1.7143 1.3333]
}

// TestSmoothedAccuracy: the batch accuracies are smoothed exactly as the losses are; a history
// without them (written before they were recorded) gives its moving averages as they are.
func TestSmoothedAccuracy(t *testing.T) {
	acc := func(v float64) *float64 { return &v }
	h := &History{Points: []HistoryPoint{
		{Step: 1, Loss: 2, Accuracy: 0.1, BatchAccuracy: acc(0.25)},
		{Step: 2, Loss: 1, Accuracy: 0.2, BatchAccuracy: acc(0.5)},
		{Step: 3, Loss: 0.5, Accuracy: 0.3, BatchAccuracy: acc(1)},
	}}
	got, batch := h.SmoothedAccuracy()
	require.True(t, batch)
	require.Equal(t, Smooth([]float64{0.25, 0.5, 1}, Smoothing), got)
	require.Equal(t, Smooth([]float64{2, 1, 0.5}, Smoothing), h.SmoothedLoss())
	h.Points[1].BatchAccuracy = nil
	got, batch = h.SmoothedAccuracy()
	require.False(t, batch)
	require.Equal(t, []float64{0.1, 0.2, 0.3}, got)
}
