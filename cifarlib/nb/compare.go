package nb

import (
	"fmt"
	"image/color"
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

// CompareLossChart overlays the training loss of runs, each smoothed as LossChart smooths it
// (runs.History.SmoothedLoss), one colour per run. Runs without curves are left out.
func CompareLossChart(list ...runs.Info) (*plot.Plot, error) {
	p := newStepChart("training loss (smoothed), by run", "cross-entropy loss")
	err := eachCurve(p, list, func(r runs.Info) (string, plotter.XYs) {
		smoothed := r.History.SmoothedLoss()
		xys := make(plotter.XYs, len(r.History.Points))
		for i, pt := range r.History.Points {
			xys[i] = plotter.XY{X: float64(pt.Step), Y: smoothed[i]}
		}
		return r.Name, xys
	})
	p.Y.Min = 0
	return p, err
}

// CompareAccuracyChart overlays the accuracy of runs, in percent: their test accuracy, at the
// evaluations their histories recorded, when any of them has one (the question a comparison
// asks), else their training accuracy smoothed as the loss is (runs.History.SmoothedAccuracy).
// Runs without curves are left out.
func CompareAccuracyChart(list ...runs.Info) (*plot.Plot, error) {
	test := false
	for _, r := range list {
		for _, pt := range historyPoints(r) {
			test = test || pt.Eval != nil
		}
	}
	if test {
		p := newStepChart("test accuracy, by run", "accuracy (%)")
		err := eachCurve(p, list, func(r runs.Info) (string, plotter.XYs) {
			var xys plotter.XYs
			for _, pt := range r.History.Points {
				if pt.Eval != nil {
					xys = append(xys, plotter.XY{X: float64(pt.Step), Y: 100 * pt.Eval.Accuracy})
				}
			}
			return r.Name, xys
		})
		p.Y.Min, p.Y.Max = 0, 100
		return p, err
	}
	p := newStepChart("training accuracy (smoothed), by run", "accuracy (%)")
	err := eachCurve(p, list, func(r runs.Info) (string, plotter.XYs) {
		smoothed, _ := r.History.SmoothedAccuracy()
		xys := make(plotter.XYs, len(r.History.Points))
		for i, pt := range r.History.Points {
			xys[i] = plotter.XY{X: float64(pt.Step), Y: 100 * smoothed[i]}
		}
		return r.Name, xys
	})
	p.Y.Min, p.Y.Max = 0, 100
	return p, err
}

// historyPoints returns the points of r's history, none when it has no history.
func historyPoints(r runs.Info) []runs.HistoryPoint {
	if r.History == nil {
		return nil
	}
	return r.History.Points
}

// eachCurve adds one line per run that has History points, in the run's colour and dashes (a
// run's colour stays its own even when its curve is empty).
func eachCurve(p *plot.Plot, list []runs.Info, curve func(runs.Info) (string, plotter.XYs)) error {
	i := 0
	for _, r := range list {
		if len(historyPoints(r)) == 0 {
			continue
		}
		name, xys := curve(r)
		if err := addLine(p, name, xys, compareColors[i%len(compareColors)], compareDashes[i%len(compareDashes)]...); err != nil {
			return err
		}
		i++
	}
	return nil
}

// Compare shows the curves of runs (from Lab.Runs, e.g. through Select) overlaid: the
// training loss, then the test accuracy (the training accuracy when none was evaluated during
// training). Under each chart, a caption says which data and machine the runs' numbers come
// from (runs.Info.Source), once when the runs share them, else with the runs each is theirs;
// synthetic data in red. Its plain-text form lists the runs compared, and
// says which had no curves (a run that failed before its first step, a foreign folder).
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
