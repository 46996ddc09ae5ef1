package nb

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// compareColors and compareDashes tell the runs of a comparison apart: runs whose curves lie on
// top of each other (the same training on 1 and 4 devices) stay visible, the later one dashed.
var (
	compareColors = []color.Color{blue, orange, green, red, color.RGBA{R: 0x8e, G: 0x6b, B: 0xb8, A: 0xff}, color.RGBA{R: 0x9c, G: 0x75, B: 0x5f, A: 0xff}}
	compareDashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)}}
)

// compared are the runs of a comparison that have curves (the others are left out of its
// charts), each with the name of its curves: what differs between them (runs.Labels, e.g.
// "label smoothing 0.2"), in a legend only where it departs from the values most runs share
// (runs.Departures: legend, and shared, said once under the runs), and by, what they differ in,
// for the charts' titles (runs.Compared).
type compared struct {
	runs           []runs.Info
	labels, legend []string
	shared         []string
	by             string
}

// compare returns the runs of list that have curves, named by what differs between them.
func compare(list []runs.Info) compared {
	var c compared
	for _, r := range list {
		if len(historyPoints(r)) > 0 {
			c.runs = append(c.runs, r)
		}
	}
	c.labels, c.by = runs.Labels(c.runs...), runs.Compared(c.runs...)
	c.shared, c.legend = runs.Departures(c.runs...)
	return c
}

// sharedHeading introduces, under a comparison's runs, the values the runs share unless their
// line says otherwise (runs.Departures).
const sharedHeading = "unless a line says otherwise:"

// addShared adds the values the runs share to p's legend, under the runs, one a line: the
// legend's column stays narrow.
func (c compared) addShared(p *plot.Plot) {
	if len(c.shared) == 0 {
		return
	}
	p.Legend.Add("")
	p.Legend.Add(sharedHeading)
	for _, v := range c.shared {
		p.Legend.Add(v)
	}
}

// CompareLossChart overlays the training loss of runs, each smoothed as LossChart smooths it
// (runs.History.SmoothedLoss), one colour per run. Its title and legend name the runs by what
// differs between them (e.g. "training loss (smoothed), by label smoothing" with "label
// smoothing 0.2" and "label smoothing 0.1"; runs.Labels), and its y axis fits the curves
// (fitData): runs whose losses differ by little read apart. Runs without curves are left out.
func CompareLossChart(list ...runs.Info) (*plot.Plot, error) {
	c := compare(list)
	p := newStepChart("training loss (smoothed), by "+c.by, "cross-entropy loss")
	err := c.eachCurve(p, func(r runs.Info) plotter.XYs {
		smoothed := r.History.SmoothedLoss()
		xys := make(plotter.XYs, len(r.History.Points))
		for i, pt := range r.History.Points {
			xys[i] = plotter.XY{X: float64(pt.Step), Y: smoothed[i]}
		}
		return xys
	})
	c.addShared(p)
	fitData(&p.Y, lossMinSpan*math.Abs(p.Y.Max), 0, math.Inf(1))
	p.Y.Tick.Marker = countTicks{} // "1.2", not "1.20"
	return p, err
}

// CompareAccuracyChart overlays the accuracy of runs, in percent: their validation accuracy,
// at the evaluations their histories recorded, when any of them has one (the question a
// comparison asks), else their training accuracy smoothed as the loss is
// (runs.History.SmoothedAccuracy). Runs are named as CompareLossChart names them, and the
// legend says what the validation was (runs.History.Validation: how many test images, which
// TTA), once when the runs share it, else with each run. The y axis fits the curves, within 0
// to 100%. Runs without curves are left out.
func CompareAccuracyChart(list ...runs.Info) (*plot.Plot, error) {
	c := compare(list)
	validations := map[string]bool{}
	for _, r := range c.runs {
		if v := r.History.Validation(); v != "" {
			validations[v] = true
		}
	}
	if len(validations) == 0 {
		p := newStepChart("training accuracy (smoothed), by "+c.by, "accuracy (%)")
		err := c.eachCurve(p, func(r runs.Info) plotter.XYs {
			smoothed, _ := r.History.SmoothedAccuracy()
			xys := make(plotter.XYs, len(r.History.Points))
			for i, pt := range r.History.Points {
				xys[i] = plotter.XY{X: float64(pt.Step), Y: 100 * smoothed[i]}
			}
			return xys
		})
		c.addShared(p)
		fitData(&p.Y, accuracyMinSpan, 0, 100)
		p.Y.Tick.Marker = countTicks{}
		return p, err
	}
	if len(validations) > 1 { // each run says its own
		for i, r := range c.runs {
			if v := r.History.Validation(); v != "" {
				c.legend[i] += " (" + strings.TrimPrefix(v, validationPrefix) + ")"
			}
		}
	}
	p := newStepChart("validation accuracy, by "+c.by, "accuracy (%)")
	err := c.eachCurve(p, func(r runs.Info) plotter.XYs {
		var xys plotter.XYs
		for _, pt := range r.History.Points {
			if pt.Eval != nil {
				xys = append(xys, plotter.XY{X: float64(pt.Step), Y: 100 * pt.Eval.Accuracy})
			}
		}
		return xys
	})
	c.addShared(p)
	if len(validations) == 1 { // under the runs, in two lines: the legend's column stays narrow
		for v := range validations {
			p.Legend.Add("")
			p.Legend.Add(strings.TrimSpace(validationPrefix))
			p.Legend.Add(strings.TrimPrefix(v, validationPrefix))
		}
	}
	fitData(&p.Y, accuracyMinSpan, 0, 100)
	p.Y.Tick.Marker = countTicks{} // "22.5", not "22.50"
	return p, err
}

// legendPadding is the space between the entries of a comparison's legend: its lines of text
// stay apart in a browser's fallback font (taller than Liberation Sans).
const legendPadding = vg.Length(2)

// validationPrefix starts what runs.History.Validation says.
const validationPrefix = "validation: "

// lossMinSpan and accuracyMinSpan are the least spans of the y axes of a comparison (fitData):
// a tenth of the largest loss, and two points of accuracy (in percent).
const (
	lossMinSpan     = 0.1
	accuracyMinSpan = 2
)

// historyPoints returns the points of r's history, none when it has no history.
func historyPoints(r runs.Info) []runs.HistoryPoint {
	if r.History == nil {
		return nil
	}
	return r.History.Points
}

// eachCurve adds one line per run, named by its label, in the run's colour and dashes (a run's
// colour stays its own even when its curve is empty: a run without evaluations in a chart of
// validation accuracy).
func (c compared) eachCurve(p *plot.Plot, curve func(runs.Info) plotter.XYs) error {
	p.Legend.Padding = legendPadding
	for i, r := range c.runs {
		if err := addLine(p, c.legend[i], curve(r), compareColors[i%len(compareColors)], compareDashes[i%len(compareDashes)]...); err != nil {
			return err
		}
	}
	return nil
}

// Compare shows the curves of runs (from Lab.Runs, e.g. through Select) overlaid: the
// training loss, then the validation accuracy (the training accuracy when none was evaluated
// during training), each run named by what differs between them, e.g. "label smoothing 0.2"
// and "label smoothing 0.1" in a chart titled "... by label smoothing" (runs.Labels: from their
// run.json's settings), the validation said in the legend (e.g. "500 test images, no TTA"),
// and y axes that fit the curves. Under each chart, a caption says which data and machine the
// runs' numbers come from (runs.Info.Source), once when the runs share them, else with the
// runs each is theirs; synthetic data in red. Its plain-text form lists the runs compared, says
// which had no curves (a run that failed before its first step, a foreign folder), and what
// each is named by.
func Compare(list ...runs.Info) {
	var text strings.Builder
	for _, r := range list {
		if r.History == nil || len(r.History.Points) == 0 {
			fmt.Fprintf(&text, "%s: no curves (%s", r.Name, r.Status)
			if r.Reason != "" {
				fmt.Fprintf(&text, ": %s", r.Reason)
			}
			text.WriteString(")\n")
			continue
		}
		last, _ := r.History.Last()
		fmt.Fprintf(&text, "%s: %d points, to step %d, last loss %.4f\n", r.Name, len(r.History.Points), last.Step, last.Loss)
	}
	if c := compare(list); len(runs.Differing(c.runs...)) > 0 {
		fmt.Fprintf(&text, "by %s: %s\n", c.by, strings.Join(named(c), "; "))
	}
	caption := compareCaption(list)
	for i, chart := range []func(...runs.Info) (*plot.Plot, error){CompareLossChart, CompareAccuracyChart} {
		img, err := render(caption)(chart(list...))
		if err != nil {
			fmt.Fprintln(output(), "error:", err)
			continue
		}
		alt := strings.TrimSuffix(text.String(), "\n") // the list, with the first chart
		if i > 0 {
			alt = fmt.Sprintf("accuracy of the %d runs above", len(list))
		}
		img.Text = caption.withText(alt)
		DisplayImage(img)
	}
}

// named lists the runs of c as "NAME: LABEL", for Compare's plain text.
func named(c compared) []string {
	out := make([]string, len(c.runs))
	for i, r := range c.runs {
		out[i] = r.Name + ": " + c.labels[i]
	}
	return out
}
