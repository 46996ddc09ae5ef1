package nb

import (
	"fmt"
	"sync"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/janpfeifer/gonb/gonbui"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// LiveEvery is the shortest time between two redraws of a live view (Live): drawing and
// sending two charts takes milliseconds, but a notebook redrawing them on every step would
// spend its time on that.
const LiveEvery = time.Second

// Live is the live view of a training run: the loss and accuracy charts of the run so far,
// redrawn in place as History points arrive (Add, the training.Env.OnPoint hook), at most every
// Every, and drawn a last time, always, by Finish. lab.Fit uses one in a notebook.
type Live struct {
	// Sink receives the charts; Every is the shortest time between two redraws (LiveEvery
	// when 0).
	Sink  Sink
	Every time.Duration
	// Source is the run's data and machine, which the charts' caption says (SourceCaption);
	// set it before the first Add (lab.Fit sets it from the run's config, and from its
	// training.Result for the last drawing).
	Source runs.Source

	mu      sync.Mutex
	now     func() time.Time // the clock; time.Now, a fake one in tests
	ids     []string
	history runs.History
	drawn   time.Time // when the charts were last drawn; zero: never
}

// NewLive returns a live view that sends its charts to sink, for a run whose history records
// top-k accuracies when topK > 0 (runs.History.TopK).
func NewLive(sink Sink, topK int) *Live {
	id := gonbui.UniqueID()
	return &Live{Sink: sink, now: time.Now, history: runs.History{TopK: topK},
		ids: []string{"cifarlab-live-loss-" + id, "cifarlab-live-accuracy-" + id}}
}

// Add records a point and redraws the charts if Every has passed since the last drawing (the
// first drawing waits for two points: a curve of one point has no scale). It never fails, so
// that it can be a training.Env.OnPoint hook: a chart that cannot be drawn is left as it was.
func (l *Live) Add(p runs.HistoryPoint) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.history.Points = append(l.history.Points, p)
	every := l.Every
	if every <= 0 {
		every = LiveEvery
	}
	if now := l.now(); len(l.history.Points) >= 2 && (l.drawn.IsZero() || now.Sub(l.drawn) >= every) {
		l.drawLocked(&l.history)
		l.drawn = now
	}
	return nil
}

// Finish draws the charts a last time, of h when it is not nil (the run's own History, e.g.
// training.Result.History), else of the points added: the drawing a saved notebook keeps. It
// reports whether there was anything to draw (two points or more).
func (l *Live) Finish(h *runs.History) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h == nil {
		h = &l.history
	}
	if len(h.Points) < 2 {
		return false
	}
	l.drawLocked(h)
	return true
}

func (l *Live) drawLocked(h *runs.History) {
	for i, c := range historyCharts(h, SourceCaption(l.Source)) {
		if c.err == nil {
			l.Sink.Update(l.ids[i], c.svg, c.text)
		}
	}
}

// drawnLive holds the histories a live view of this program has drawn to the end (lab.Fit),
// so that Show of their training.Result does not draw the same charts a second time. A notebook
// cell is a program of its own, so it holds the few runs of one cell.
var drawnLive sync.Map // *cifarlib.History -> struct{}

// chart is one drawn chart of a history: its SVG and text alternative, or why it failed.
type chart struct {
	svg, text string
	err       error
}

// historyCharts draws the loss and accuracy charts of h, in that order, with one legend
// column width, so that their last steps line up when shown one above the other, each with the
// caption under it and in its text.
func historyCharts(h *runs.History, caption Caption) []chart {
	last, _ := h.Last()
	names := []string{"loss", "accuracy"}
	plots := make([]*plot.Plot, len(names))
	errs := make([]error, len(names))
	plots[0], errs[0] = LossChart(h)
	plots[1], errs[1] = AccuracyChart(h)
	var column vg.Length
	for i, p := range plots {
		if errs[i] == nil {
			column = max(column, legendColumn(p))
		}
	}
	out := make([]chart, len(names))
	for i, name := range names {
		out[i] = chart{err: errs[i], text: caption.withText(fmt.Sprintf("%s curve: %d points, to step %d", name, len(h.Points), last.Step))}
		if errs[i] == nil {
			out[i].svg, out[i].err = svgWithColumn(plots[i], column, caption)
		}
	}
	return out
}
