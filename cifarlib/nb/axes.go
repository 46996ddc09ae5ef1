package nb

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// newStepChart is a chart of something per training step: its x axis is a step axis, from step
// 0 (before the first step) to at least step 1, and grows with the data added, with whole-step
// ticks (stepTicks). A curve of one point is drawn over [0, its step], of two over [0, 2]: never
// gonum/plot's "1.0 1.5 2.0" or a range of a point's step ±1.
func newStepChart(title, y string) *plot.Plot {
	p := newChart(title, "step", y)
	p.X.Min, p.X.Max = 0, 1
	p.X.Tick.Marker = stepTicks{}
	return p
}

// stepTicks are the ticks of a step axis: whole steps, at a step of 1, 2 or 5 times a power of
// ten, so that [min, max] has 2 to 6 labelled ticks (fewer only when it holds fewer whole
// numbers), with unlabelled whole-step ticks between them.
type stepTicks struct{}

// maxStepLabels is the most labelled ticks stepTicks puts on an axis.
const maxStepLabels = 6

// Ticks implements plot.Ticker.
func (stepTicks) Ticks(min, max float64) []plot.Tick {
	lo, hi := math.Ceil(min), math.Floor(max)
	if hi < lo {
		return nil // no whole step in the range
	}
	major, minor := stepSpacing(hi - lo)
	var ticks []plot.Tick
	for v := math.Ceil(lo/minor) * minor; v <= hi; v += minor {
		t := plot.Tick{Value: v}
		if math.Mod(v, major) == 0 {
			t.Label = strconv.FormatFloat(v, 'f', 0, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// stepSpacing returns the distance between the labelled ticks of a step axis spanning span
// steps (the least of 1, 2, 5, 10, 20, 50, ... that gives at most maxStepLabels labels), and
// between its unlabelled ones (a fifth or a half of it, and whole; the labelled distance when
// no whole fraction fits).
func stepSpacing(span float64) (major, minor float64) {
	for pow := 1.0; ; pow *= 10 {
		for _, m := range []float64{1, 2, 5} {
			major = m * pow
			if math.Floor(span/major)+1 > maxStepLabels {
				continue
			}
			minor = major / 5
			if m == 2 {
				minor = major / 2
			}
			if minor < 1 || minor != math.Trunc(minor) {
				minor = major
			}
			return major, minor
		}
	}
}

// fitData fits axis a to the data added to its chart (gonum/plot's Add sets a.Min and a.Max to
// the data's range), so that curves which differ by little read apart: the data's range padded
// by dataPad of it on each side, and at least minSpan wide around its middle (one point, or
// curves that are flat), kept within [lo, hi] (a loss is never negative, an accuracy in percent
// lies in [0, 100]). An axis without data is left to gonum/plot.
func fitData(a *plot.Axis, minSpan, lo, hi float64) {
	if math.IsInf(a.Min, 0) || math.IsInf(a.Max, 0) || a.Min > a.Max {
		return
	}
	pad := dataPad * (a.Max - a.Min)
	min, max := a.Min-pad, a.Max+pad
	if max-min < minSpan {
		mid := (a.Min + a.Max) / 2
		min, max = mid-minSpan/2, mid+minSpan/2
	}
	if min < lo { // shift the range inside [lo, hi] rather than cut it
		min, max = lo, math.Min(hi, max+lo-min)
	}
	if max > hi {
		min, max = math.Max(lo, min-(max-hi)), hi
	}
	a.Min, a.Max = min, max
}

// dataPad is the space fitData leaves around the data, as a fraction of its range.
const dataPad = 0.05
