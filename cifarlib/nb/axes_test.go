package nb

import (
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
)

// labels returns the labels of p's x axis, as gonum/plot draws them.
func labels(p *plot.Plot) []string {
	var out []string
	for _, t := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		if t.Label != "" {
			out = append(out, t.Label)
		}
	}
	return out
}

// TestStepTicks: a step axis is labelled with whole steps, 2 to 6 of them, at 1, 2 or 5 times a
// power of ten, with unlabelled whole-step ticks between them.
func TestStepTicks(t *testing.T) {
	for _, c := range []struct {
		min, max float64
		want     []string
		minor    int // unlabelled ticks
	}{
		{0, 1, []string{"0", "1"}, 0},
		{0, 2, []string{"0", "1", "2"}, 0},
		{0, 5, []string{"0", "1", "2", "3", "4", "5"}, 0},
		{0, 6, []string{"0", "2", "4", "6"}, 3},
		{0, 20, []string{"0", "5", "10", "15", "20"}, 16},
		{0, 200, []string{"0", "50", "100", "150", "200"}, 16},
		{0, 967, []string{"0", "200", "400", "600", "800"}, 5},
		{1, 8, []string{"2", "4", "6", "8"}, 4},
		{0.5, 1.5, []string{"1"}, 0},
		{0.2, 0.8, nil, 0},
	} {
		ticks := stepTicks{}.Ticks(c.min, c.max)
		var got []string
		minor := 0
		for _, tick := range ticks {
			require.Equal(t, math.Trunc(tick.Value), tick.Value, "[%g, %g]: whole steps only", c.min, c.max)
			require.True(t, tick.Value >= c.min && tick.Value <= c.max, "[%g, %g]: %g outside", c.min, c.max, tick.Value)
			if tick.Label == "" {
				minor++
				continue
			}
			got = append(got, tick.Label)
		}
		require.Equal(t, c.want, got, "[%g, %g]", c.min, c.max)
		require.Equal(t, c.minor, minor, "[%g, %g]", c.min, c.max)
	}
	for hi := 1.0; hi < 1e6; hi = math.Ceil(hi * 1.37) {
		n := len(labelsOf(stepTicks{}.Ticks(0, hi)))
		require.True(t, n >= 2 && n <= maxStepLabels, "[0, %g]: %d labels", hi, n)
	}
}

func labelsOf(ticks []plot.Tick) []string {
	var out []string
	for _, t := range ticks {
		if t.Label != "" {
			out = append(out, t.Label)
		}
	}
	return out
}

// history is a run's history of n steps, its loss falling from 2.3, an evaluation at each step
// in evals.
func history(n int, evals ...int) *runs.History {
	h := &runs.History{}
	for step := 1; step <= n; step++ {
		p := runs.HistoryPoint{Step: step, Loss: 2.3 - 0.01*float64(step), Accuracy: 0.1 + 0.001*float64(step)}
		for _, e := range evals {
			if e == step {
				p.Eval = &runs.EvalPoint{Examples: 100, Loss: 2, Accuracy: 0.2}
			}
		}
		h.Points = append(h.Points, p)
	}
	return h
}

// TestStepAxis: every chart of steps (a run's loss and accuracy, Compare's) spans step 0 to its
// last step with whole-step labels: "0 1" for one point, "0 1 2" for two (never "1.0 1.5
// 2.0", never a point's step ±1), and a curve of one point is drawn as a dot.
func TestStepAxis(t *testing.T) {
	charts := map[string]func(h *runs.History) (*plot.Plot, error){
		"loss":     LossChart,
		"accuracy": AccuracyChart,
		"compare loss": func(h *runs.History) (*plot.Plot, error) {
			return CompareLossChart(runs.Info{Name: "a", History: h}, runs.Info{Name: "b", History: h})
		},
		"compare accuracy": func(h *runs.History) (*plot.Plot, error) {
			return CompareAccuracyChart(runs.Info{Name: "a", History: h})
		},
	}
	for name, chart := range charts {
		for _, c := range []struct {
			h    *runs.History
			want []string
		}{
			{history(1), []string{"0", "1"}},
			{history(2), []string{"0", "1", "2"}},
			{history(3), []string{"0", "1", "2", "3"}},
			{history(200, 100, 200), []string{"0", "50", "100", "150", "200"}},
		} {
			p, err := chart(c.h)
			require.NoError(t, err)
			require.Equal(t, 0.0, p.X.Min, "%s of %d points", name, len(c.h.Points))
			require.Equal(t, float64(len(c.h.Points)), p.X.Max, "%s of %d points", name, len(c.h.Points))
			require.Equal(t, c.want, labels(p), "%s of %d points", name, len(c.h.Points))
			svg, err := SVG(p)
			require.NoError(t, err)
			if len(c.h.Points) == 1 {
				require.Positive(t, circles(svg), "%s of one point: a dot", name)
			}
		}
	}
	// One evaluation in a comparison of test accuracies: a dot at its step.
	p, err := CompareAccuracyChart(runs.Info{Name: "a", History: history(50, 50)})
	require.NoError(t, err)
	require.Equal(t, []string{"0", "10", "20", "30", "40", "50"}, labels(p))
	svg, err := SVG(p)
	require.NoError(t, err)
	require.Positive(t, circles(svg))
}

// circleRE matches an SVG path that draws a circle: gonum/plot's vgsvg writes a glyph's circle
// as arcs.
var circleRE = regexp.MustCompile(`<path d="M[^"]*A[^"]*"`)

// circles counts the circles of an SVG document drawn by gonum/plot.
func circles(svg string) int { return len(circleRE.FindAllString(svg, -1)) }

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 points", 1: "1 point", 2: "2 points", 20: "20 points"} {
		require.Equal(t, want, plural(n, "point"), strconv.Itoa(n))
	}
}
