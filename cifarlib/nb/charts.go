package nb

import (
	"bytes"
	"fmt"
	"image/color"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart colours.
var (
	blue   = color.RGBA{R: 0x4c, G: 0x78, B: 0xa8, A: 0xff}
	orange = color.RGBA{R: 0xf5, G: 0x85, B: 0x18, A: 0xff}
	green  = color.RGBA{R: 0x54, G: 0xa2, B: 0x4b, A: 0xff}
	red    = color.RGBA{R: 0xe4, G: 0x57, B: 0x56, A: 0xff}
	grey   = color.RGBA{R: 0xbb, G: 0xbb, B: 0xbb, A: 0xff}
)

// ChartWidth and ChartHeight are the size of the charts Show draws.
const (
	ChartWidth  = 18 * vg.Centimeter
	ChartHeight = 7 * vg.Centimeter
)

// LossChart plots a run's training loss per step (the batch loss, light, and its moving
// average) and the test loss of the evaluations recorded in the history.
func LossChart(h *cifarlib.History) (*plot.Plot, error) {
	p := newChart("loss", "step", "cross-entropy loss")
	var batch, moving, test plotter.XYs
	for _, pt := range h.Points {
		batch = append(batch, plotter.XY{X: float64(pt.Step), Y: pt.Loss})
		moving = append(moving, plotter.XY{X: float64(pt.Step), Y: pt.MovingLoss})
		if pt.Eval != nil {
			test = append(test, plotter.XY{X: float64(pt.Step), Y: pt.Eval.Loss})
		}
	}
	if err := addLine(p, "train (batch)", batch, grey); err != nil {
		return nil, err
	}
	if err := addLine(p, "train (moving average)", moving, blue); err != nil {
		return nil, err
	}
	if err := addPoints(p, "test", test, orange); err != nil {
		return nil, err
	}
	return p, nil
}

// AccuracyChart plots a run's training accuracy (moving average) and the test accuracy of the
// evaluations recorded in the history, in percent, with top-5 accuracies when the history has
// them (CIFAR-100).
func AccuracyChart(h *cifarlib.History) (*plot.Plot, error) {
	p := newChart("accuracy", "step", "accuracy (%)")
	var train, test, trainTop, testTop plotter.XYs
	for _, pt := range h.Points {
		x := float64(pt.Step)
		train = append(train, plotter.XY{X: x, Y: 100 * pt.Accuracy})
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
	top := fmt.Sprintf("top-%d", h.TopK)
	for _, err := range []error{
		addLine(p, "train (moving average)", train, blue),
		addPoints(p, "test", test, orange),
		addLine(p, "train "+top, trainTop, green),
		addPoints(p, "test "+top, testTop, red),
	} {
		if err != nil {
			return nil, err
		}
	}
	// Accuracies rise to the right: the legend goes top left, the scale is the whole 0-100%.
	p.Y.Min, p.Y.Max, p.Legend.Left = 0, 100, true
	return p, nil
}

// LabelChart plots the label histogram of s as bars, those of labels a head of s.HeadWidth
// outputs cannot represent in red.
func LabelChart(title string, s cifarlib.SplitLabels) (*plot.Plot, error) {
	p := newChart(title, "label", "examples")
	inside := make(plotter.Values, len(s.Histogram))
	beyond := make(plotter.Values, len(s.Histogram))
	most := 0
	for label, n := range s.Histogram {
		most = max(most, n)
		if s.HeadWidth > 0 && label >= s.HeadWidth {
			beyond[label] = float64(n)
		} else {
			inside[label] = float64(n)
		}
	}
	width := max(1, ChartWidth*0.6/vg.Length(max(1, len(s.Histogram))))
	narrow := s.HeadWidth > 0 && s.HeadWidth < len(s.Histogram)
	for _, part := range []struct {
		values plotter.Values
		colour color.Color
		legend string
	}{
		{inside, blue, fmt.Sprintf("labels < %d", s.HeadWidth)},
		{beyond, red, fmt.Sprintf("labels >= %d: no output of the head for them", s.HeadWidth)},
	} {
		if part.colour == red && !narrow {
			continue
		}
		bars, err := plotter.NewBarChart(part.values, width)
		if err != nil {
			return nil, fmt.Errorf("nb: label chart: %w", err)
		}
		bars.Color, bars.LineStyle.Width = part.colour, 0
		p.Add(bars)
		if narrow {
			p.Legend.Add(part.legend, bars)
		}
	}
	p.Y.Min, p.Y.Max = 0, 1.4*float64(max(1, most)) // room for the legend above the bars
	return p, nil
}

// SVG renders a chart as a self-contained SVG document of ChartWidth x ChartHeight, with a
// small right margin for the last tick label.
func SVG(p *plot.Plot) (string, error) {
	c := vgsvg.New(ChartWidth, ChartHeight)
	p.Draw(draw.Crop(draw.New(c), 0, -vg.Points(10), 0, 0))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("nb: rendering %q as SVG: %w", p.Title.Text, err)
	}
	return strings.ReplaceAll(b.String(), svgFontFamily, svgFontFallbacks), nil
}

// chartFont is Liberation Sans, metric-compatible with Arial and Helvetica: the SVG names those
// as fallbacks (see SVG), so that text measured by gonum/plot fits where browsers draw it.
var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

func newChart(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		f.Typeface, f.Variant = chartFont.Typeface, chartFont.Variant
	}
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	return p
}

// svgFontFamily is how vgsvg names chartFont, and svgFontFallbacks what SVG replaces it with.
const (
	svgFontFamily    = "font-family:Liberation Sans;"
	svgFontFallbacks = "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"
)

// addLine adds a line with a legend entry; empty data adds nothing.
func addLine(p *plot.Plot, name string, xys plotter.XYs, c color.Color) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("nb: %s of %q: %w", name, p.Title.Text, err)
	}
	l.Color, l.Width = c, vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// addPoints adds markers joined by a thin line, with a legend entry; empty data adds nothing.
func addPoints(p *plot.Plot, name string, xys plotter.XYs, c color.Color) error {
	if len(xys) == 0 {
		return nil
	}
	lp, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("nb: %s of %q: %w", name, p.Title.Text, err)
	}
	lp.Color, lp.Width = c, vg.Points(1)
	pts.Color, pts.Shape = c, draw.CircleGlyph{}
	p.Add(lp, pts)
	p.Legend.Add(name, lp, pts)
	return nil
}
