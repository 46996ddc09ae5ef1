package nb

// A run's curves: the loss and the accuracy of its History, step by step, with the evaluations
// it recorded (the chart's parts are charts.go's).

import (
	"fmt"
	"math"

	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// LossChart plots a run's training loss per step (the batch loss, light, and the batch loss
// smoothed as TensorBoard smooths it, runs.History.SmoothedLoss) and the test loss of the
// evaluations recorded in the history, named by what they evaluated ("test: 500 images, no
// TTA"). Its y axis fits the curves, as a comparison's does (fitData): a loss going from 2.35
// to 1.97 fills the chart.
func LossChart(h *runs.History) (*plot.Plot, error) {
	legend, smoothed := testLegend(h), h.SmoothedLoss()
	p := newStepChart("loss", "cross-entropy loss")
	var batch, smooth, test plotter.XYs
	for i, pt := range h.Points {
		batch = append(batch, plotter.XY{X: float64(pt.Step), Y: pt.Loss})
		smooth = append(smooth, plotter.XY{X: float64(pt.Step), Y: smoothed[i]})
		if pt.Eval != nil {
			test = append(test, plotter.XY{X: float64(pt.Step), Y: pt.Eval.Loss})
		}
	}
	for _, err := range []error{
		addLine(p, "train (batch)", batch, grey),
		addLine(p, "train (smoothed)", smooth, blue),
		addPoints(p, legend, test, orange),
	} {
		if err != nil {
			return nil, err
		}
	}
	fitData(&p.Y, lossMinSpan*math.Abs(p.Y.Max), 0, math.Inf(1)) // a loss is never negative
	p.Y.Tick.Marker = countTicks{}
	return p, nil
}

// testLegend names the evaluation points of a run's charts by what they evaluated, as its last
// evaluation did: "test: 500 images, no TTA"; "test" when the history has none.
func testLegend(h *runs.History) string {
	for i := len(h.Points) - 1; i >= 0; i-- {
		if e := h.Points[i].Eval; e != nil {
			return e.Legend()
		}
	}
	return "test"
}

// AccuracyChart plots a run's training accuracy per step (the batch accuracy, light, and the
// batch accuracy smoothed as the loss is, runs.History.SmoothedAccuracy; for an older history,
// the moving average it recorded) and the test accuracy of the evaluations recorded in the
// history (named by what they evaluated, as LossChart names them), in percent, with top-5 accuracies (moving averages) when the history has them
// (CIFAR-100).
func AccuracyChart(h *runs.History) (*plot.Plot, error) {
	legend := testLegend(h)
	smoothed, fromBatches := h.SmoothedAccuracy()
	p := newStepChart("accuracy", "accuracy (%)")
	var batch, train, test, trainTop, testTop plotter.XYs
	for i, pt := range h.Points {
		x := float64(pt.Step)
		train = append(train, plotter.XY{X: x, Y: 100 * smoothed[i]})
		if fromBatches {
			batch = append(batch, plotter.XY{X: x, Y: 100 * *pt.BatchAccuracy})
		}
		if h.TopK > 0 {
			trainTop = append(trainTop, plotter.XY{X: x, Y: 100 * pt.TopK})
		}
		if e := pt.Eval; e != nil {
			test = append(test, plotter.XY{X: x, Y: 100 * e.Accuracy})
			if h.TopK > 0 {
				testTop = append(testTop, plotter.XY{X: x, Y: 100 * e.TopK})
			}
		}
	}
	trainName := "train (moving average)"
	if fromBatches {
		trainName = "train (smoothed)"
	}
	top := fmt.Sprintf("top-%d", h.TopK)
	for _, err := range []error{
		addLine(p, "train (batch)", batch, grey),
		addLine(p, trainName, train, blue),
		addPoints(p, legend, test, orange),
		addLine(p, "train "+top, trainTop, green),
		addPoints(p, "test "+top, testTop, red),
	} {
		if err != nil {
			return nil, err
		}
	}
	p.Y.Min, p.Y.Max = 0, 100 // the whole scale: chance and perfect are where they always are
	return p, nil
}
