package nb

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// compareRun is a run of the recipe with params (run.json's settings as runs.Read gives them:
// Info.Settings), whose loss falls from 2.3 to final over n steps and which was validated on
// evalN test images every 5 steps (none when evalN is 0), its validation accuracy rising to acc.
func compareRun(name string, params map[string]string, n int, final, acc float64, evalN int) runs.Info {
	settings := map[string]string{"recipe": "airbench94", "dataset": "cifar10", "model": "airbench94", "head": "10", "guard": "true",
		"batch": "1024", "steps": "10", "devices": "1", "precision": "f32"}
	for k, v := range params {
		settings[k] = v
	}
	h := &runs.History{}
	for step := 1; step <= n; step++ {
		f := float64(step) / float64(n)
		p := runs.HistoryPoint{Step: step, Loss: final + (2.3-final)*(1-f), Accuracy: 0.1 + (acc-0.1)*f}
		if evalN > 0 && (step%5 == 0 || step == n) {
			p.Eval = &runs.EvalPoint{Examples: evalN, Split: "test", Loss: p.Loss, Accuracy: p.Accuracy}
		}
		h.Add(p)
	}
	return runs.Info{Name: name, Dir: "/runs/" + name, Status: runs.RunDone, Settings: settings, History: h, Values: tableWords()}
}

// tableWords is the settings' table as run.json records it (its order, words and bookkeeping;
// the values are Info.Settings').
func tableWords() []runs.Setting {
	var table []runs.Setting
	for _, f := range training.Fields() {
		table = append(table, runs.Setting{Name: f.Name, Words: f.Label, Bookkeeping: f.Bookkeeping})
	}
	return table
}

// TestCompareNamesRuns: a comparison's title says what its runs differ in, its legend names
// each run by its values of those settings (not by its folder, nor by all its settings), and
// says once what the validation was (how many test images, which TTA), or with each run when
// theirs differ.
func TestCompareNamesRuns(t *testing.T) {
	ls := func(v string) map[string]string { return map[string]string{"label-smoothing": v} }
	for _, c := range []struct {
		name             string
		list             []runs.Info
		loss, acc        string   // the charts' titles
		legend, notInSVG []string // in the loss chart's legend; in neither chart
		accLegend        []string // in the accuracy chart's legend (nil: legend)
	}{
		{"two runs, one value changed", []runs.Info{compareRun("ls-a", ls("0.2"), 10, 1.2, 0.6, 500), compareRun("ls-b", ls("0.1"), 10, 1.1, 0.62, 500)},
			"training loss (smoothed), by label smoothing", "validation accuracy, by label smoothing",
			[]string{"label smoothing 0.2", "label smoothing 0.1"}, []string{"ls-a", "ls-b", "airbench94", "1024"},
			[]string{"label smoothing 0.2", "label smoothing 0.1", "validation:", "500 test images, no TTA"}},
		{"three runs, two values", []runs.Info{
			compareRun("a", map[string]string{"lr": "11.5", "seed": "1"}, 10, 1.2, 0.6, 500),
			compareRun("b", map[string]string{"lr": "5.75", "seed": "2"}, 10, 1.3, 0.55, 500),
			compareRun("c", map[string]string{"lr": "23", "seed": "3"}, 10, 1.4, 0.5, 500)},
			"training loss (smoothed), by seed and learning rate", "validation accuracy, by seed and learning rate",
			[]string{"seed 1, learning rate 11.5", "seed 2, learning rate 5.75", "seed 3, learning rate 23"}, []string{"airbench94"}, nil},
		{"validations differ: each run says its own", []runs.Info{
			compareRun("small", map[string]string{"eval-examples": "500"}, 10, 1.2, 0.6, 500),
			compareRun("whole", map[string]string{"eval-examples": "10000"}, 10, 1.2, 0.6, 10000)},
			"training loss (smoothed), by run", "validation accuracy, by run",
			[]string{"small", "whole"}, []string{"validation:"},
			[]string{"small (500 test images, no TTA)", "whole (10,000 test images, no TTA)"}},
		{"no evaluations: the training accuracy, no validation note", []runs.Info{
			compareRun("a", ls("0.2"), 10, 1.2, 0.6, 0), compareRun("b", ls("0.1"), 10, 1.1, 0.6, 0)},
			"training loss (smoothed), by label smoothing", "training accuracy (smoothed), by label smoothing",
			[]string{"label smoothing 0.2", "label smoothing 0.1"}, []string{"validation"}, nil},
		{"the same settings: by folder", []runs.Info{compareRun("first", nil, 10, 1.2, 0.6, 0), compareRun("again", nil, 10, 1.2, 0.6, 0)},
			"training loss (smoothed), by run", "training accuracy (smoothed), by run", []string{"first", "again"}, nil, nil},
		{"a run without curves is left out of the names", []runs.Info{
			compareRun("a", ls("0.2"), 10, 1.2, 0.6, 500), compareRun("b", ls("0.1"), 10, 1.1, 0.6, 500),
			{Name: "failed", Status: runs.RunFailed, Settings: map[string]string{"label-smoothing": "0.3", "seed": "9"}}},
			"training loss (smoothed), by label smoothing", "validation accuracy, by label smoothing",
			[]string{"label smoothing 0.2", "label smoothing 0.1"}, []string{"failed", "0.3", "seed"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			loss, err := CompareLossChart(c.list...)
			require.NoError(t, err)
			acc, err := CompareAccuracyChart(c.list...)
			require.NoError(t, err)
			require.Equal(t, []string{c.loss, c.acc}, []string{loss.Title.Text, acc.Title.Text})
			lossSVG, err := SVG(loss)
			require.NoError(t, err)
			accSVG, err := SVG(acc)
			require.NoError(t, err)
			requireSVG(t, lossSVG, c.legend...)
			if c.accLegend == nil {
				c.accLegend = c.legend
			}
			requireSVG(t, accSVG, c.accLegend...)
			for _, not := range c.notInSVG {
				require.NotContains(t, lossSVG, ">"+not, "the loss chart names %q", not)
				require.NotContains(t, accSVG, ">"+not, "the accuracy chart names %q", not)
			}
			require.NotContains(t, lossSVG, "validation", "the loss chart is of training")
		})
	}
}

// TestCompareAxesFit: a comparison's y axis fits its curves: no forced zero under a loss, an
// accuracy axis around the accuracies (within 0 to 100%), padded by a twentieth of their range
// so that no curve runs along its edge, and a range around the value for one point or flat
// curves (never gonum/plot's value ± 1).
func TestCompareAxesFit(t *testing.T) {
	ls := func(v string) map[string]string { return map[string]string{"label-smoothing": v} }
	loss := func(r runs.Info) []float64 { return r.History.SmoothedLoss() }
	validation := func(r runs.Info) (v []float64) {
		for _, p := range r.History.Points {
			if p.Eval != nil {
				v = append(v, 100*p.Eval.Accuracy)
			}
		}
		return v
	}
	training := func(r runs.Info) (v []float64) {
		smoothed, _ := r.History.SmoothedAccuracy()
		for _, a := range smoothed {
			v = append(v, 100*a)
		}
		return v
	}
	for _, c := range []struct {
		name     string
		list     []runs.Info
		chart    func(...runs.Info) (*plot.Plot, error)
		values   func(runs.Info) []float64 // the curves' values
		min, max func(lo, hi float64) float64
	}{
		{"losses: no zero", []runs.Info{compareRun("a", ls("0.2"), 10, 1.2, 0.6, 0), compareRun("b", ls("0.1"), 10, 1.0, 0.6, 0)}, CompareLossChart, loss,
			func(lo, hi float64) float64 { return lo - (hi-lo)/20 }, func(lo, hi float64) float64 { return hi + (hi-lo)/20 }},
		{"validation accuracies", []runs.Info{compareRun("a", ls("0.2"), 10, 1.2, 0.6, 500), compareRun("b", ls("0.1"), 10, 1.0, 0.7, 500)},
			CompareAccuracyChart, validation,
			func(lo, hi float64) float64 { return lo - (hi-lo)/20 }, func(lo, hi float64) float64 { return hi + (hi-lo)/20 }},
		{"accuracies near 100%: the axis stops at 100, its span kept", []runs.Info{
			compareRun("a", ls("0.2"), 10, 0.1, 0.999, 0), compareRun("b", ls("0.1"), 10, 0.1, 0.9, 0)}, CompareAccuracyChart, training,
			func(lo, hi float64) float64 { return 100 - 1.1*(hi-lo) }, func(lo, hi float64) float64 { return 100 }},
		{"one point each, close: a tenth of the loss around them", []runs.Info{
			compareRun("a", ls("0.2"), 1, 2.0, 0.2, 500), compareRun("b", ls("0.1"), 1, 2.02, 0.25, 500)}, CompareLossChart, loss,
			func(lo, hi float64) float64 { return (lo+hi)/2 - 0.05*hi }, func(lo, hi float64) float64 { return (lo+hi)/2 + 0.05*hi }},
		{"one point of accuracy: two points of span", []runs.Info{compareRun("a", ls("0.2"), 1, 2.0, 0.2, 500)}, CompareAccuracyChart, validation,
			func(lo, hi float64) float64 { return lo - 1 }, func(lo, hi float64) float64 { return hi + 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, r := range c.list {
				for _, v := range c.values(r) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
			p, err := c.chart(c.list...)
			require.NoError(t, err)
			require.InDelta(t, c.min(lo, hi), p.Y.Min, 1e-9, "min, of data in [%g, %g]", lo, hi)
			require.InDelta(t, c.max(lo, hi), p.Y.Max, 1e-9, "max, of data in [%g, %g]", lo, hi)
			require.Positive(t, p.Y.Min)
		})
	}
}

// TestFitData: fitData pads the data's range, widens a narrow one around its middle, keeps it
// within its bounds by shifting it, and leaves an axis without data alone.
func TestFitData(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		name             string
		min, max         float64
		minSpan, lo, hi  float64
		wantMin, wantMax float64
	}{
		{"padded", 1, 2, 0, 0, inf, 0.95, 2.05},
		{"narrow: the least span around the middle", 2, 2, 0.2, 0, inf, 1.9, 2.1},
		{"at the bottom: shifted up", 0.01, 0.02, 0.2, 0, inf, 0, 0.2},
		{"at the top: shifted down", 99, 100, 2, 0, 100, 98, 100},
		{"wider than its bounds: cut", 0, 100, 2, 0, 100, 0, 100},
		{"no data", inf, -inf, 2, 0, 100, inf, -inf},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := plot.New().Y
			a.Min, a.Max = c.min, c.max
			fitData(&a, c.minSpan, c.lo, c.hi)
			require.InDelta(t, c.wantMin, a.Min, 1e-9)
			require.InDelta(t, c.wantMax, a.Max, 1e-9)
		})
	}
}

// manyRuns are n runs of the recipe (n <= 10) that differ in seed, learning rate, label
// smoothing and epochs, as a researcher's loop leaves them: most share a learning rate, a label
// smoothing and a length, each departing in one of them at most; the seeds vary throughout.
func manyRuns(n int) []runs.Info {
	lrs := []string{"11.5", "5.75", "23", "11.5", "11.5", "8", "11.5", "11.5", "14", "11.5"}
	lss := []string{"0.2", "0.2", "0.2", "0.1", "0.2", "0.2", "0.3", "0.2", "0.2", "0.2"}
	epochs := []string{"2", "2", "2", "2", "3", "2", "2", "2", "2", "4"}
	var list []runs.Info
	for i := range n {
		params := map[string]string{"seed": fmt.Sprint(i%3 + 1), "lr": lrs[i], "label-smoothing": lss[i], "epochs": epochs[i]}
		list = append(list, compareRun(fmt.Sprintf("r%d", i), params, 40, 1.9+0.02*float64(i), 0.3+0.01*float64(i), 500))
	}
	return list
}

// TestCompareManyRuns: a comparison of 2, 5 and 10 runs keeps its title whole (it fits the
// chart, wrapped if need be, every word drawn), its legend compact (the values most runs share
// said once, each run by where it departs from them) and tall enough for the chart, and its plot
// the main part of the chart: its legend's column leaves the plot at least minPlotShare of the
// width.
func TestCompareManyRuns(t *testing.T) {
	for _, n := range []int{2, 5, 10} {
		list := manyRuns(n)
		for _, chart := range []func(...runs.Info) (*plot.Plot, error){CompareLossChart, CompareAccuracyChart} {
			p, err := chart(list...)
			require.NoError(t, err)
			title := p.Title.Text
			w, h, _ := chartPainter(p, 0, Caption{})
			column := legendColumn(p)
			require.GreaterOrEqual(t, (w-column)/w, vg.Length(minPlotShare)-1e-9, "%d runs: the plot's share", n)
			layout := chartTitle(p, w, column)
			for _, line := range strings.Split(layout.text, "\n") {
				require.LessOrEqual(t, p.Title.TextStyle.Width(line), w-2*chartMargin, "%d runs: %q fits", n, line)
			}
			require.Equal(t, strings.Fields(title), strings.Fields(layout.text), "every word of the title")
			require.GreaterOrEqual(t, h, p.Legend.Rectangle(draw.Canvas{}).Size().Y, "%d runs: the legend fits the chart's height", n)
			svg, err := SVG(p)
			require.NoError(t, err)
			texts := svgTexts(t, svg)
			require.Contains(t, texts, title, "%d runs", n)
			require.Contains(t, texts, "seed 2, learning rate 5.75", "%d runs", n)
			if n > 2 {
				requireSVG(t, svg, ">"+sharedHeading+"<", ">learning rate 11.5<", ">label smoothing 0.2<", ">2 epochs<", ">seed 1<")
				require.NotContains(t, texts, "seed 1, learning rate 11.5", "%d runs: a run departs in nothing but its seed", n)
			}
		}
	}
}
