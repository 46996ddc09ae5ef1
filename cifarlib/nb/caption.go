package nb

import (
	"fmt"
	"image/color"
	"slices"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Caption is the text drawn under a chart: which data, and for curves which machine, its
// numbers come from (runs.Source), so that a chart read far from the notebook's first cell
// still says that its data is synthetic. Synthetic data is drawn in red.
type Caption struct {
	// Lines are the caption's lines, each wrapped to the chart's width when drawn.
	Lines []string
	// Synthetic is true when (some of) the data is synthetic: the caption is drawn in red.
	Synthetic bool
}

// SourceCaption is the caption of a run's charts: "data: ... · machine: ..." (runs.Source).
func SourceCaption(src runs.Source) Caption {
	return Caption{Lines: []string{src.String()}, Synthetic: src.Synthetic()}
}

// DataCaption is the caption of a chart of data alone (labels, images): "data: ..." with the
// data as data.Caption says it.
func DataCaption(dataset, kind string) Caption {
	return Caption{Lines: []string{"data: " + data.Caption(dataset, kind)}, Synthetic: kind == data.KindSynthetic}
}

// compareCaption is the caption of charts that overlay runs: each of data and machine said
// once when the runs share it, else each value followed by the runs it is theirs, e.g.
// "machine: xla:cpu (XLA CPU plugin), 1 device (05-one-device); xla:cpu (XLA CPU plugin), 4
// devices (05-four-devices)". Runs without curves are left out, as the charts leave them out.
func compareCaption(list []runs.Info) Caption {
	var c Caption
	var dataParts, machineParts grouped
	for _, r := range list {
		if len(historyPoints(r)) == 0 {
			continue
		}
		src := r.Source()
		c.Synthetic = c.Synthetic || src.Synthetic()
		dataParts.add(src.DataCaption(), r.Name)
		machineParts.add(src.MachineCaption(), r.Name)
	}
	c.Lines = []string{"data: " + dataParts.String() + captionSep + "machine: " + machineParts.String()}
	return c
}

// grouped collects values in the order first seen, each with the names that have it.
type grouped struct {
	values []string
	names  [][]string
}

func (g *grouped) add(value, name string) {
	i := slices.Index(g.values, value)
	if i < 0 {
		g.values, g.names = append(g.values, value), append(g.names, nil)
		i = len(g.values) - 1
	}
	g.names[i] = append(g.names[i], name)
}

// String is the one value, or every value with its names in brackets.
func (g grouped) String() string {
	if len(g.values) == 1 {
		return g.values[0]
	}
	parts := make([]string, len(g.values))
	for i, v := range g.values {
		parts[i] = fmt.Sprintf("%s (%s)", v, strings.Join(g.names[i], ", "))
	}
	return strings.Join(parts, "; ")
}

// Text is the caption as plain text, for a chart's plain-text alternative: its lines, unwrapped.
func (c Caption) Text() string { return strings.Join(c.Lines, "\n") }

// withText returns text followed by the caption's lines.
func (c Caption) withText(text string) string {
	if len(c.Lines) == 0 {
		return text
	}
	return strings.TrimSuffix(text, "\n") + "\n" + c.Text()
}

// captionRed is the colour of a caption of synthetic data: a darker red than the charts' red,
// to read as text.
var captionRed = color.RGBA{R: 0xb0, G: 0x1e, B: 0x1e, A: 0xff}

// captionGap is the space between a chart and its caption, and below the caption.
const captionGap = vg.Length(4)

// style is the text style of the caption.
func (c Caption) style() text.Style {
	sty := text.Style{Color: color.RGBA{R: 0x33, G: 0x33, B: 0x33, A: 0xff}, Handler: plot.DefaultTextHandler,
		XAlign: draw.XLeft, YAlign: draw.YTop}
	sty.Font.Typeface, sty.Font.Variant, sty.Font.Size = chartFont.Typeface, chartFont.Variant, vg.Points(9)
	if c.Synthetic {
		sty.Color = captionRed
		sty.Font.Weight = xfont.WeightBold
	}
	return sty
}

// captionSlack is how much wider than measured a caption line may be drawn: the width is
// measured in Liberation Sans, and a browser without it draws a fallback font up to ~20% wider
// (DejaVu Sans Bold: 18%), which must still fit.
const captionSlack = 1.2

// wrapped returns the caption's lines broken so that each fits in width, in a fallback font
// too (captionSlack): at " · " between its parts (data, machine) first, then at spaces.
func (c Caption) wrapped(width vg.Length) []string {
	width /= captionSlack
	sty := c.style()
	fits := func(s string) bool { return sty.Width(s) <= width }
	var out []string
	for _, line := range c.Lines {
		cur := ""
		for i, part := range strings.Split(line, captionSep) {
			if i > 0 && fits(cur+captionSep+part) {
				cur += captionSep + part
				continue
			}
			if i > 0 {
				out = append(out, cur+strings.TrimRight(captionSep, " "))
			}
			words := strings.Split(part, " ")
			cur = words[0]
			for _, word := range words[1:] {
				if fits(cur + " " + word) {
					cur += " " + word
					continue
				}
				out = append(out, cur)
				cur = word
			}
		}
		out = append(out, cur)
	}
	return out
}

// captionSep separates the parts of a caption's line.
const captionSep = " · "

// height is the height the caption takes under a chart of the given width (0 without lines).
func (c Caption) height(width vg.Length) vg.Length {
	if len(c.Lines) == 0 {
		return 0
	}
	sty := c.style()
	return vg.Length(len(c.wrapped(width)))*sty.Height("M") + 2*captionGap
}

// draw draws the caption at the top left of dc, wrapped to its width less the margins.
func (c Caption) draw(dc draw.Canvas) {
	sty := c.style()
	width := dc.Max.X - dc.Min.X - 2*captionMargin
	y := dc.Max.Y - captionGap
	for _, line := range c.wrapped(width) {
		dc.FillText(sty, vg.Point{X: dc.Min.X + captionMargin, Y: y}, line)
		y -= sty.Height("M")
	}
}

// captionMargin is the caption's left and right margin.
const captionMargin = vg.Length(6)

// plural is n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
