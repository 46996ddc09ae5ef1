package cifarlib

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"
	"math"
	"strings"
)

// Charts for notebooks, drawn as self-contained SVG documents: they need no JavaScript and no
// network (unlike Plotly, which loads its library from a CDN), so they render the same in
// JupyterLab, in nbconvert's HTML and on GitHub. Show them with DisplaySVG.

// SVG colours of the charts.
const (
	svgBarColour       = "#4c78a8"
	svgHighlightColour = "#e45756"
	svgAxisColour      = "#444444"
	svgGridColour      = "#dddddd"
)

// svgMaxMarkers is the largest number of points of a series that LineChartSVG marks with dots;
// longer series are drawn as a plain line.
const svgMaxMarkers = 40

// svgSeriesColours are the line colours of LineChartSVG, in series order.
var svgSeriesColours = []string{"#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2"}

// Chart geometry, in SVG user units (pixels).
const (
	svgWidth       = 720.0
	svgHeight      = 300.0
	svgMarginLeft  = 60.0
	svgMarginRight = 20.0
	svgMarginTop   = 40.0
	svgMarginBot   = 50.0
)

// LabelHistogramSVG draws the histogram of labels hist (hist[i] = number of examples with label
// i) as a bar chart. Bars of labels >= headWidth are drawn in red, with a legend saying that a
// head of headWidth outputs cannot represent them; headWidth <= 0 or >= len(hist) highlights
// nothing.
func LabelHistogramSVG(title string, hist []int, headWidth int) string {
	var b strings.Builder
	svgOpen(&b, title)
	x0, y0 := svgMarginLeft, svgHeight-svgMarginBot
	plotW, plotH := svgWidth-svgMarginLeft-svgMarginRight, svgHeight-svgMarginTop-svgMarginBot
	maxCount := 0
	for _, c := range hist {
		maxCount = max(maxCount, c)
	}
	top := float64(niceCeil(float64(maxCount)))
	if top <= 0 {
		top = 1
	}
	for _, t := range []float64{0, top / 2, top} {
		y := y0 - t/top*plotH
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, x0, y, x0+plotW, y, svgGridColour)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="11">%s</text>`, x0-6, y+4, formatTick(t))
	}
	n := len(hist)
	highlight := headWidth > 0 && headWidth < n
	if n > 0 {
		slot := plotW / float64(n)
		gap := math.Min(1, slot*0.15)
		for i, c := range hist {
			h := float64(c) / top * plotH
			colour := svgBarColour
			if highlight && i >= headWidth {
				colour = svgHighlightColour
			}
			fmt.Fprintf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"><title>label %d: %d</title></rect>`,
				x0+float64(i)*slot+gap/2, y0-h, slot-gap, h, colour, i, c)
		}
		step := max(1, n/10)
		for i := 0; i < n; i += step {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11">%d</text>`,
				x0+(float64(i)+0.5)*slot, y0+15, i)
		}
	}
	svgAxes(&b, "label", "examples")
	if highlight {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/>`, x0+plotW-330, svgMarginTop-16, svgHighlightColour)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11">labels &gt;= %d: no output of a %d-wide head</text>`,
			x0+plotW-315, svgMarginTop-7, headWidth, headWidth)
	}
	b.WriteString("</svg>")
	return b.String()
}

// Series is one line of LineChartSVG: points (X[i], Y[i]). NaN values are skipped.
type Series struct {
	// Name is shown in the legend.
	Name string
	// X and Y hold the coordinates; they must have the same length.
	X, Y []float64
}

// LineChartSVG draws one or more series as lines, e.g. a loss or accuracy curve against the
// training step; series of at most 40 points also get a dot per point. The y axis runs from 0
// to a round number above the data; so does the x axis when no x is negative.
func LineChartSVG(title, xLabel, yLabel string, series ...Series) string {
	var b strings.Builder
	svgOpen(&b, title)
	x0, y0 := svgMarginLeft, svgHeight-svgMarginBot
	plotW, plotH := svgWidth-svgMarginLeft-svgMarginRight, svgHeight-svgMarginTop-svgMarginBot
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range series {
		for i := range min(len(s.X), len(s.Y)) {
			if math.IsNaN(s.X[i]) || math.IsNaN(s.Y[i]) {
				continue
			}
			minX, maxX, maxY = math.Min(minX, s.X[i]), math.Max(maxX, s.X[i]), math.Max(maxY, s.Y[i])
		}
	}
	if math.IsInf(minX, 1) {
		minX, maxX = 0, 1
	}
	if minX >= 0 { // steps, counts: start the axis at 0 and end it at a round number
		minX, maxX = 0, max(niceCeil(maxX), 1)
	}
	if maxX == minX {
		maxX = minX + 1
	}
	topY := niceCeil(maxY)
	if topY <= 0 {
		topY = 1
	}
	px := func(x float64) float64 { return x0 + (x-minX)/(maxX-minX)*plotW }
	py := func(y float64) float64 { return y0 - y/topY*plotH }
	for k := 0; k <= 4; k++ {
		t := topY * float64(k) / 4
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, x0, py(t), x0+plotW, py(t), svgGridColour)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="11">%s</text>`, x0-6, py(t)+4, formatTick(t))
		xt := minX + (maxX-minX)*float64(k)/4
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11">%s</text>`, px(xt), y0+15, formatTick(xt))
	}
	legendX := x0 + 10
	for si, s := range series {
		colour := svgSeriesColours[si%len(svgSeriesColours)]
		var pts []string
		for i := range min(len(s.X), len(s.Y)) {
			if math.IsNaN(s.X[i]) || math.IsNaN(s.Y[i]) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[i]), py(s.Y[i])))
		}
		if len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, colour, strings.Join(pts, " "))
		}
		if len(pts) <= svgMaxMarkers || len(pts) == 1 {
			for _, p := range pts {
				xy := strings.SplitN(p, ",", 2)
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`, xy[0], xy[1], colour)
			}
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/>`, legendX, svgMarginTop-16, colour)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11">%s</text>`, legendX+14, svgMarginTop-7, html.EscapeString(s.Name))
		legendX += 14 + 6.5*float64(len(s.Name)) + 20 // about 6.5 units per character at font size 11
	}
	svgAxes(&b, xLabel, yLabel)
	b.WriteString("</svg>")
	return b.String()
}

// ImageGridSVG draws the images of the given examples of recs in a grid of cols columns, each
// magnified 3 times (pixels kept sharp) with its label and class name underneath. The images are
// embedded as PNG, so the SVG is self-contained.
func ImageGridSVG(recs *Records, examples []int, cols int) (string, error) {
	if recs == nil {
		return "", fmt.Errorf("cifarlib: ImageGridSVG: records are nil")
	}
	if cols <= 0 {
		return "", fmt.Errorf("cifarlib: ImageGridSVG: %d columns: must be at least 1", cols)
	}
	const scale, cellW, cellH, top = 3, 120.0, 125.0, 8.0
	rows := (len(examples) + cols - 1) / cols
	w, h := cellW*float64(min(cols, max(1, len(examples)))), top+cellH*float64(rows)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif">`,
		w, h, w, h)
	for k, ex := range examples {
		if ex < 0 || ex >= recs.Len() {
			return "", fmt.Errorf("cifarlib: ImageGridSVG: example %d out of range [0, %d) of %s", ex, recs.Len(), recs.Source)
		}
		data, err := RecordPNG(recs, ex)
		if err != nil {
			return "", err
		}
		cx := cellW*float64(k%cols) + cellW/2
		cy := top + cellH*float64(k/cols)
		size := float64(ImageWidth * scale)
		fmt.Fprintf(&b, `<image x="%.1f" y="%.1f" width="%.0f" height="%.0f" style="image-rendering:pixelated" href="data:image/png;base64,%s"/>`,
			cx-size/2, cy, size, size, base64.StdEncoding.EncodeToString(data))
		label := recs.Label(ex)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="12">%d: %s</text>`,
			cx, cy+size+15, label, html.EscapeString(recs.Spec.ClassName(label)))
	}
	b.WriteString("</svg>")
	return b.String(), nil
}

// RecordPNG encodes the image of example i of recs (stored planar: the red, green and blue
// 32x32 planes) as a 32x32 PNG.
func RecordPNG(recs *Records, i int) ([]byte, error) {
	if i < 0 || i >= recs.Len() {
		return nil, fmt.Errorf("cifarlib: RecordPNG: example %d out of range [0, %d) of %s", i, recs.Len(), recs.Source)
	}
	planar := recs.Image(i)
	const plane = ImageHeight * ImageWidth
	img := image.NewNRGBA(image.Rect(0, 0, ImageWidth, ImageHeight))
	for y := range ImageHeight {
		for x := range ImageWidth {
			p := y*ImageWidth + x
			img.SetNRGBA(x, y, color.NRGBA{R: planar[p], G: planar[plane+p], B: planar[2*plane+p], A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("cifarlib: RecordPNG: %w", err)
	}
	return buf.Bytes(), nil
}

// svgOpen writes the <svg> element with a white background and the title.
func svgOpen(b *strings.Builder, title string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif">`,
		svgWidth, svgHeight, svgWidth, svgHeight)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`)
	fmt.Fprintf(b, `<text x="%.1f" y="16" text-anchor="middle" font-size="14" font-weight="bold">%s</text>`,
		svgWidth/2, html.EscapeString(title))
}

// svgAxes draws the x and y axes and their labels.
func svgAxes(b *strings.Builder, xLabel, yLabel string) {
	x0, y0 := svgMarginLeft, svgHeight-svgMarginBot
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, x0, y0, svgWidth-svgMarginRight, y0, svgAxisColour)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, x0, svgMarginTop, x0, y0, svgAxisColour)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="12">%s</text>`,
		x0+(svgWidth-svgMarginLeft-svgMarginRight)/2, svgHeight-12, html.EscapeString(xLabel))
	fmt.Fprintf(b, `<text x="14" y="%.1f" text-anchor="middle" font-size="12" transform="rotate(-90 14 %.1f)">%s</text>`,
		svgMarginTop+(y0-svgMarginTop)/2, svgMarginTop+(y0-svgMarginTop)/2, html.EscapeString(yLabel))
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten (0 for v <= 0).
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// formatTick prints an axis value compactly: integers without decimals, others with up to 3
// significant digits.
func formatTick(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e9 {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.3g", v)
}

// HistoryLossSVG draws the loss curves of a training run: the moving average of the training
// loss at every History point and the test loss where the run evaluated (TrainConfig.EvalEvery).
func HistoryLossSVG(title string, h *History) string {
	var train, test Series
	train.Name, test.Name = "train loss (moving average)", "test loss"
	if h != nil {
		for _, p := range h.Points {
			train.X, train.Y = append(train.X, float64(p.Step)), append(train.Y, p.MovingLoss)
			if p.Eval != nil {
				test.X, test.Y = append(test.X, float64(p.Step)), append(test.Y, p.Eval.Loss)
			}
		}
	}
	if len(test.X) == 0 {
		return LineChartSVG(title, "step", "loss", train)
	}
	return LineChartSVG(title, "step", "loss", train, test)
}

// HistoryAccuracySVG draws the accuracy curves of a training run, in percent: the moving
// average of the training accuracy and the test accuracy where the run evaluated.
func HistoryAccuracySVG(title string, h *History) string {
	var train, test Series
	train.Name, test.Name = "train accuracy % (moving average)", "test accuracy %"
	if h != nil {
		for _, p := range h.Points {
			train.X, train.Y = append(train.X, float64(p.Step)), append(train.Y, 100*p.Accuracy)
			if p.Eval != nil {
				test.X, test.Y = append(test.X, float64(p.Step)), append(test.Y, 100*p.Eval.Accuracy)
			}
		}
	}
	if len(test.X) == 0 {
		return LineChartSVG(title, "step", "accuracy %", train)
	}
	return LineChartSVG(title, "step", "accuracy %", train, test)
}
