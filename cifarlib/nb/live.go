package nb

import (
	"fmt"
	"sync"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/janpfeifer/gonb/gonbui"
	"github.com/janpfeifer/gonb/gonbui/protocol"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// LiveEvery is the shortest time between two redraws of a live view (Live): drawing and
// sending two charts takes milliseconds, but a notebook redrawing them on every step would
// spend its time on that.
const LiveEvery = time.Second

// Sink is where a live view sends its charts. Update replaces the display called id by img;
// the first Update of an id creates the display, in the cell's output where the cell is at
// that time. NotebookSink is the notebook's; tests record the updates.
type Sink interface {
	Update(id string, img *Image)
}

// NotebookSink updates displays of the GoNB cell in place (gonbui's display ids: Jupyter's
// update_display_data), as DisplayImage shows an Image (SVG, PNG and text): no JavaScript, the
// last update is what a saved notebook keeps, and an untrusted notebook shows its PNG.
type NotebookSink struct{}

// Update sends img to the display id and waits until GoNB has it.
func (NotebookSink) Update(id string, img *Image) {
	data, metadata := img.bundle()
	data[protocol.MIMETextPlain] = img.Text
	cellIO.send(&protocol.DisplayData{Data: data, Metadata: metadata, DisplayID: id})
}

// Live is the live view of a training run: the loss and accuracy charts of the run so far,
// drawn from the first History point and redrawn in place as points arrive (Add, the
// training.Config.OnPoint hook), at most every Every, and drawn a last time, always, by Finish.
// lab.Fit uses one in a notebook, and calls Finish when the run ends, fails or is interrupted.
// The redraws are SVG (what the running notebook shows: outputs of a cell run in JupyterLab are
// trusted), 3-8 times cheaper than with the PNG, so that they take little from the training;
// Finish draws each chart as a whole Image, SVG and PNG, which the saved notebook keeps and an
// untrusted notebook, GitHub and nbviewer show.
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

// Add records a point and draws the charts: at once for the first point (a cell shows its
// curves from the first step), then when Every has passed since the last drawing. It never
// fails, so that it can be a training.Config.OnPoint hook: a chart that cannot be drawn is left
// as it was.
func (l *Live) Add(p runs.HistoryPoint) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.history.Points = append(l.history.Points, p)
	every := l.Every
	if every <= 0 {
		every = LiveEvery
	}
	if now := l.now(); l.drawn.IsZero() || now.Sub(l.drawn) >= every {
		l.drawLocked(&l.history, false)
		l.drawn = now
	}
	return nil
}

// Finish draws the charts a last time, of h when it is not nil (the run's own History, e.g.
// training.Result.History), else of the points added: the drawing a saved notebook keeps. It
// reports whether there was anything to draw (a point or more).
func (l *Live) Finish(h *runs.History) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h == nil {
		h = &l.history
	}
	if len(h.Points) == 0 {
		return false
	}
	l.drawLocked(h, true)
	return true
}

// drawLocked draws the charts of h, with their PNG when final (see Live).
func (l *Live) drawLocked(h *runs.History, final bool) {
	for i, c := range historyCharts(h, SourceCaption(l.Source), final) {
		if c.err == nil {
			l.Sink.Update(l.ids[i], c.img)
		}
	}
}

// drawnLive holds the histories a live view of this program has drawn to the end (lab.Fit),
// so that Show of their training.Result does not draw the same charts a second time. A notebook
// cell is a program of its own, so it holds the few runs of one cell.
var drawnLive sync.Map // *cifarlib.History -> struct{}

// chart is one drawn chart of a history, with its text, or why it failed.
type chart struct {
	img *Image
	err error
}

// plural is n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// historyCharts draws the loss and accuracy charts of h, in that order, with one legend
// column width, so that their last steps line up when shown one above the other, each with the
// caption under it and in its text.
func historyCharts(h *runs.History, caption Caption, withPNG bool) []chart {
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
		if out[i].err = errs[i]; out[i].err != nil {
			continue
		}
		if out[i].img, out[i].err = renderChart(plots[i], column, caption, withPNG); out[i].err != nil {
			out[i].err = fmt.Errorf("nb: rendering the %s chart: %w", name, out[i].err)
			continue
		}
		out[i].img.Text = caption.withText(fmt.Sprintf("%s curve: %s, to step %d", name, plural(len(h.Points), "point"), last.Step))
	}
	return out
}
