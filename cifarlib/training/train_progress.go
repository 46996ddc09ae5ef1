package training

import (
	"os"

	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ui/commandline"
	"github.com/gomlx/gomlx/ui/gonb/plotly"
	"github.com/gomlx/gomlx/ui/notebooks"
)

// liveCurves feeds History points to a GoMLX plotly figure that redraws in the notebook as
// training goes (PlotConfig.Dynamic), and draws the final version when training ends.
type liveCurves struct {
	pc      *plotly.PlotConfig
	history *runs.History
}

// newLiveCurves starts a dynamic plot, pre-filled with the points of a resumed history.
func newLiveCurves(history *runs.History) *liveCurves {
	lc := &liveCurves{pc: plotly.New(), history: history}
	for _, p := range history.PlotPoints() {
		lc.pc.AddPoint(p)
	}
	for range history.Points {
		lc.pc.DynamicSampleDone(false)
	}
	lc.pc.Dynamic()
	return lc
}

// add plots one new point.
func (lc *liveCurves) add(p runs.HistoryPoint) {
	one := runs.History{TopK: lc.history.TopK, Points: []runs.HistoryPoint{p}}
	for _, pt := range one.PlotPoints() {
		lc.pc.AddPoint(pt)
	}
	lc.pc.DynamicSampleDone(false)
}

// finish replaces the transient plot by the final one.
func (lc *liveCurves) finish() { lc.pc.DynamicPlot(true) }

// progressEnabled resolves ProgressAuto: on in a notebook (GoNB, bash_kernel) or when stdout
// is a terminal.
func progressEnabled(mode ProgressMode) bool {
	switch mode {
	case ProgressOn:
		return true
	case ProgressOff:
		return false
	}
	if notebooks.IsNotebook() {
		return true
	}
	fi, err := os.Stdout.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// attachProgress attaches GoMLX's progress bar (terminal table, or a one-line bar in GoNB) to loop.
func attachProgress(loop *train.Loop, mode ProgressMode, extra ...commandline.ExtraMetricFn) bool {
	if !progressEnabled(mode) {
		return false
	}
	commandline.AttachProgressBar(loop, extra...)
	return true
}
