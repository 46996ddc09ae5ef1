package nb

import (
	"fmt"
	"image/color"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Chart colours.
var (
	blue   = color.RGBA{R: 0x4c, G: 0x78, B: 0xa8, A: 0xff}
	orange = color.RGBA{R: 0xf5, G: 0x85, B: 0x18, A: 0xff}
	green  = color.RGBA{R: 0x54, G: 0xa2, B: 0x4b, A: 0xff}
	red    = color.RGBA{R: 0xe4, G: 0x57, B: 0x56, A: 0xff}
	grey   = color.RGBA{R: 0xbb, G: 0xbb, B: 0xbb, A: 0xff}
)

// ChartWidth and ChartHeight are the size of the charts Show draws (a chart whose legend needs
// more room is wider or taller: see SVG).
const (
	ChartWidth  = 18 * vg.Centimeter
	ChartHeight = 7 * vg.Centimeter
)

// LabelChart plots the label histogram of s as bars, those of labels a head of s.HeadWidth
// outputs cannot represent in red.
func LabelChart(title string, s data.SplitLabels) (*plot.Plot, error) {
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
	width := max(1, ChartWidth*0.4/vg.Length(max(1, len(s.Histogram)))) // a gap between bars, legend column aside
	narrow := s.HeadWidth > 0 && s.HeadWidth < len(s.Histogram)
	for _, part := range []struct {
		values plotter.Values
		colour color.Color
		legend string
	}{
		{inside, blue, fmt.Sprintf("labels < %d", s.HeadWidth)},
		{beyond, red, fmt.Sprintf("labels >= %d: beyond the head", s.HeadWidth)},
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
	p.Y.Min, p.Y.Max = 0, 1.1*float64(max(1, most))
	p.Y.Tick.Marker = countTicks{}
	return p, nil
}

// countTicks are gonum/plot's default ticks labelled as the shortest decimal of their value:
// counts read "50", where the default format of a range like 0-50.6 writes "50.00", and a
// comparison's accuracies "22.5", not "22.50".
type countTicks struct{}

// Ticks implements plot.Ticker.
func (countTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i, t := range ticks {
		if t.Label != "" && !strings.ContainsAny(t.Label, "eE") && strings.Contains(t.Label, ".") {
			// gonum's label has the ticks' precision ("2.40"); the value itself may carry float
			// noise (2.4000000000000004): trim the label's trailing zeros instead.
			ticks[i].Label = strings.TrimSuffix(strings.TrimRight(t.Label, "0"), ".")
		}
	}
	return ticks
}

// SVG renders a chart as a self-contained SVG document ChartWidth wide and ChartHeight high
// (wider when its legend's column would leave the plot less than minPlotShare of it, taller when
// its legend is taller than the chart), plus the height of its caption, if given: drawn under the chart (which data and machine the
// chart's numbers come from: SourceCaption, DataCaption), wrapped to the chart's width. The
// legend, if any, goes in a column right of the chart, where it cannot cover a curve,
// top-aligned with the plotting area; margins keep the top and the last tick labels inside the
// document. Render draws the same as an Image: SVG and PNG.
func SVG(p *plot.Plot, caption ...Caption) (string, error) {
	w, h, paint := chartPainter(p, 0, joinCaptions(caption))
	svg, err := svgOf(w, h, paint)
	if err != nil {
		return "", fmt.Errorf("nb: rendering %q as SVG: %w", p.Title.Text, err)
	}
	return svg, nil
}

// joinCaptions is the caption of all of cs: their lines, red when any is synthetic.
func joinCaptions(cs []Caption) Caption {
	var all Caption
	for _, c := range cs {
		all.Lines, all.Synthetic = append(all.Lines, c.Lines...), all.Synthetic || c.Synthetic
	}
	return all
}

// legendColumn returns the width of the column SVG gives p's legend, 0 when p has none. Text
// is measured in Liberation Sans; a browser without it draws a fallback font up to ~15% wider,
// which the column's slack absorbs (the entries are left-aligned).
func legendColumn(p *plot.Plot) vg.Length {
	w := p.Legend.Rectangle(draw.Canvas{}).Size().X
	if w <= 0 {
		return 0
	}
	return 1.15*w + 2*legendGap
}

// renderChart draws p as an Image, with a legend column at least minColumn wide: charts shown
// one above the other get the same column, so that their plotting areas end at the same place
// (their starts still differ by the width of the y tick labels). Without withPNG it draws the
// SVG alone (a live view's redraws: see Live).
func renderChart(p *plot.Plot, minColumn vg.Length, caption Caption, withPNG bool) (*Image, error) {
	w, h, paint := chartPainter(p, minColumn, caption)
	if !withPNG {
		svg, err := svgOf(w, h, paint)
		if err != nil {
			return nil, err
		}
		return &Image{SVG: svg, Width: cssPixels(w), Height: cssPixels(h)}, nil
	}
	return renderImage(w, h, false, paint)
}

// chartPainter returns the size of p's drawing with the caption under it and the legend in a
// column at least minColumn wide, and the function that draws it on a canvas of that size. The
// title is centred over the plotting area when it fits there, else over the whole width (a
// comparison's "..., by seed, learning rate and epochs"), wrapped when even that is too narrow:
// it is never clipped. A legend wider than a chart leaves room for (a comparison's runs) makes
// the chart wider (up to maxChartWidth), so that the plot keeps minPlotShare of it; one taller
// than the chart makes the chart taller, never longer than its column.
func chartPainter(p *plot.Plot, minColumn vg.Length, caption Caption) (w, h vg.Length, paint func(draw.Canvas)) {
	column := legendColumn(p)
	w = ChartWidth
	if column > 0 {
		column = max(column, minColumn)
		w = min(max(w, column/(1-minPlotShare)), maxChartWidth)
	}
	below := caption.height(w - 2*captionMargin)
	title := chartTitle(p, w, column)
	titleHeight := p.Title.TextStyle.Height(title.text) + p.Title.Padding
	chartHeight := ChartHeight
	if column > 0 {
		chartHeight = max(chartHeight, p.Legend.Rectangle(draw.Canvas{}).Size().Y+titleHeight+3*chartMargin)
	}
	return w, chartHeight + below, func(dc draw.Canvas) {
		if below > 0 {
			caption.draw(draw.Crop(dc, 0, 0, 0, -chartHeight))
			dc = draw.Crop(dc, 0, 0, below, 0)
		}
		if title.whole { // over the whole width, above the plot and its legend
			drawTitle(draw.Crop(dc, 0, 0, 0, -chartMargin), p, title.text)
			dc = draw.Crop(dc, 0, 0, 0, -titleHeight)
		}
		saved := p.Title.Text
		p.Title.Text = title.text
		if title.whole {
			p.Title.Text = ""
		}
		defer func() { p.Title.Text = saved }()
		legend := p.Legend
		if column > 0 {
			p.Legend = plot.Legend{TextStyle: legend.TextStyle} // drawn below, not over the data
			defer func() { p.Legend = legend }()
			top := titleHeight
			if title.whole {
				top = 0
			}
			legend.Top, legend.Left, legend.XOffs, legend.YOffs = true, true, 0, 0
			legend.Draw(draw.Crop(dc, w-column+legendGap, 0, chartMargin, -top-chartMargin))
			dc = draw.Crop(dc, 0, -column, 0, 0)
		} else {
			dc = draw.Crop(dc, 0, -legendGap, 0, 0) // room for the last x tick label
		}
		p.Draw(draw.Crop(dc, chartMargin, 0, 0, -chartMargin)) // the y label's text box inside the chart
	}
}

// chartLayout is how a chart's title is drawn: its text (wrapped into lines when too wide), and
// whether over the whole width (whole) or over the plotting area, as gonum/plot draws it.
type chartLayout struct {
	text  string
	whole bool
}

// chartTitle lays p's title out for a chart w wide whose legend column is column wide (0:
// none): over the plotting area when it fits there (gonum/plot's place), else over the whole
// width, wrapped at spaces into lines that fit it.
func chartTitle(p *plot.Plot, w, column vg.Length) chartLayout {
	sty, text := p.Title.TextStyle, p.Title.Text
	if text == "" || sty.Width(text) <= w-column-2*legendGap {
		return chartLayout{text: text}
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && sty.Width(line+" "+word) > w-2*chartMargin {
			lines, line = append(lines, line), word
			continue
		}
		line = strings.TrimPrefix(line+" "+word, " ")
	}
	return chartLayout{text: strings.Join(append(lines, line), "\n"), whole: true}
}

// drawTitle draws text, a chart's title, centred at the top of c, as gonum/plot draws a title.
func drawTitle(c draw.Canvas, p *plot.Plot, text string) {
	descent := p.Title.TextStyle.FontExtents().Descent
	c.FillText(p.Title.TextStyle, vg.Point{X: c.Center().X, Y: c.Max.Y + descent}, text)
}

// minPlotShare is the least share of a chart's width its plot keeps (with its y axis) beside
// the legend's column: a wider legend makes the chart wider, up to maxChartWidth.
const (
	minPlotShare  = 0.7
	maxChartWidth = 1.5 * ChartWidth
)

// chartMargin is the space kept above a chart (for the top tick label, half of which sticks out
// of the plotting area) and left of it (the y axis's label, whose text box a browser's font makes
// taller than gonum/plot measures it), and legendGap the space around the legend column.
const (
	chartMargin = vg.Length(4)
	legendGap   = vg.Length(10)
)

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
	return p
}

// svgFontFamily is how vgsvg names chartFont, and svgFontFallbacks what SVG replaces it with.
const (
	svgFontFamily    = "font-family:Liberation Sans;"
	svgFontFallbacks = "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"
)

// addLine adds a line with a legend entry, dashed when dashes are given; empty data adds
// nothing. A line of one point, which has no length, is drawn as a dot (a live chart's first
// step, a run with one evaluation).
func addLine(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashes ...vg.Length) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("nb: %s of %q: %w", name, p.Title.Text, err)
	}
	l.Color, l.Width, l.Dashes = c, vg.Points(1.5), dashes
	p.Add(l)
	p.Legend.Add(name, l)
	if len(xys) == 1 {
		dot, err := plotter.NewScatter(xys)
		if err != nil {
			return fmt.Errorf("nb: %s of %q: %w", name, p.Title.Text, err)
		}
		dot.Color, dot.Shape, dot.Radius = c, draw.CircleGlyph{}, vg.Points(3)
		p.Add(dot)
	}
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
