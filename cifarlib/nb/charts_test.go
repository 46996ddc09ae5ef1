package nb

import (
	"encoding/xml"
	"strconv"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/stretchr/testify/require"
)

func TestCountTicks(t *testing.T) {
	labels := func(min, max float64) []string {
		var out []string
		for _, tick := range (countTicks{}).Ticks(min, max) {
			if tick.Label != "" {
				out = append(out, tick.Label)
			}
		}
		return out
	}
	require.Equal(t, []string{"0", "25", "50"}, labels(0, 50.6))
	// A fitted loss axis: gonum's tick values carry float noise (2.4000000000000004), its
	// labels the ticks' precision ("2.40"); a label is the shortest of the latter.
	for _, r := range [][2]float64{{1.5, 2.45}, {1.45, 2.41}, {0.1, 0.7}, {0.21, 0.29}, {22.1, 23.4}} {
		for _, l := range labels(r[0], r[1]) {
			require.LessOrEqual(t, len(l), 5, "range %v: label %q", r, l)
			require.False(t, strings.HasSuffix(l, "0") && strings.Contains(l, "."), "range %v: label %q", r, l)
		}
	}
	require.Contains(t, labels(1.5, 2.45), "2.4")
}

// TestHistoryChartsShareTheLegendColumn: the loss and accuracy charts of a run are drawn with
// the wider of their two legend columns, so that their last steps line up one above the other.
func TestHistoryChartsShareTheLegendColumn(t *testing.T) {
	h := testHistory()
	for i := range h.Points { // without evaluations, whose legend both charts have
		h.Points[i].Eval = nil
	}
	loss, err := LossChart(h)
	require.NoError(t, err)
	acc, err := AccuracyChart(h)
	require.NoError(t, err)
	require.Less(t, legendColumn(loss), legendColumn(acc), "the accuracy legend is the wider one")
	want, err := renderChart(loss, legendColumn(acc), Caption{}, true)
	require.NoError(t, err)
	charts := historyCharts(h, Caption{}, true)
	require.NoError(t, charts[0].err)
	require.Equal(t, want.SVG, charts[0].img.SVG)
	require.Equal(t, want.PNG, charts[0].img.PNG)
	alone, err := SVG(loss)
	require.NoError(t, err)
	require.NotEqual(t, alone, charts[0].img.SVG, "alone, the loss chart's column is narrower")
}

// svgTexts returns the texts of doc's <text> elements, in document order, joined by spaces:
// a caption wrapped over several lines reads as one.
func svgTexts(t *testing.T, doc string) string {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(doc))
	var texts []string
	in := false
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			in = tok.Name.Local == "text"
		case xml.EndElement:
			in = false
		case xml.CharData:
			if in {
				texts = append(texts, string(tok))
			}
		}
	}
	return strings.Join(texts, " ")
}

// TestChartCaptions: every chart of a run says, under it and in its text, which data (synthetic
// in capitals and red) and which machine its numbers come from.
func TestChartCaptions(t *testing.T) {
	for _, c := range []struct {
		name      string
		src       runs.Source
		want      string
		synthetic bool
	}{
		{"synthetic", runs.Source{Data: &data.Provenance{Dataset: "cifar100", Kind: data.KindSynthetic}, Backend: "xla:cpu (XLA CPU plugin)", Devices: 4},
			"data: SYNTHETIC cifar100 (generated images, not real accuracy) · machine: xla:cpu (XLA CPU plugin), 4 devices", true},
		{"real, verified", runs.Source{Data: &data.Provenance{Dataset: "cifar10", Kind: data.KindVerified}, Backend: "xla:cuda (XLA CUDA: NVIDIA H200)",
			Devices: 1, Precision: cifarlib.PrecisionBF16Mixed},
			"data: real cifar10, verified · machine: xla:cuda (XLA CUDA: NVIDIA H200), 1 device, bf16-mixed", false},
		{"real, unverified", runs.Source{Data: &data.Provenance{Dataset: "cifar10", Kind: data.KindUnverified}, Backend: "go (pure Go, CPU)", Devices: 1,
			Precision: cifarlib.PrecisionF32}, "data: real cifar10, unverified · machine: go (pure Go, CPU), 1 device", false},
		{"in memory", runs.Source{Data: &data.Provenance{Dataset: "cifar10", Kind: data.KindInMemory}},
			"data: cifar10, not known whether real or synthetic · machine: not recorded", false},
		{"not recorded", runs.Source{}, "data: not recorded · machine: not recorded", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			charts := historyCharts(testHistory(), SourceCaption(c.src), true)
			for i, name := range []string{"loss", "accuracy"} {
				require.NoError(t, charts[i].err)
				require.Equal(t, curveText(name, 20)+"\n"+c.want, charts[i].img.Text)
				requireSVG(t, charts[i].img.SVG)
				require.Contains(t, svgTexts(t, charts[i].img.SVG), c.want)
				require.Equal(t, c.synthetic, strings.Contains(charts[i].img.SVG, "fill:#B01E1E"), "red when synthetic")
			}
		})
	}
}

// TestCaptionWrapsAndTakesItsOwnStrip: a caption too long for one line is broken at spaces
// into lines that fit the chart's width, and the document grows by the caption's height, so
// that the chart and its legend keep their size and place.
func TestCaptionWrapsAndTakesItsOwnStrip(t *testing.T) {
	c := Caption{Lines: []string{strings.Repeat("word ", 60) + "end"}}
	lines := c.wrapped(ChartWidth - 2*captionMargin)
	require.Greater(t, len(lines), 1)
	require.Equal(t, c.Lines[0], strings.Join(lines, " "), "nothing lost, nothing added")
	two := SourceCaption(runs.Source{Data: &data.Provenance{Dataset: "cifar100", Kind: data.KindSynthetic}, Backend: "xla:cpu (XLA CPU plugin)", Devices: 4})
	require.Equal(t, []string{"data: SYNTHETIC cifar100 (generated images, not real accuracy) ·", "machine: xla:cpu (XLA CPU plugin), 4 devices"},
		two.wrapped(ChartWidth-2*captionMargin), "broken between data and machine first")
	for _, l := range lines {
		require.LessOrEqual(t, captionSlack*c.style().Width(l), ChartWidth-2*captionMargin, "fits in a fallback font too")
	}
	p, err := LossChart(testHistory())
	require.NoError(t, err)
	bare, err := SVG(p)
	require.NoError(t, err)
	withCaption, err := SVG(p, c)
	require.NoError(t, err)
	height := func(doc string) float64 {
		_, rest, _ := strings.Cut(doc, `height="`)
		h, err := strconv.ParseFloat(rest[:strings.Index(rest, "pt")], 64)
		require.NoError(t, err)
		return h
	}
	w, _, _ := chartPainter(p, 0, c) // a chart as wide as its legend needs (ChartWidth or more)
	require.InDelta(t, height(bare)+c.height(w-2*captionMargin).Points(), height(withCaption), 0.01)
}

// TestCompareCaption: Compare's caption says the data and the machine once when the runs share
// them, else each with its runs; one synthetic run makes it red.
func TestCompareCaption(t *testing.T) {
	synth := &data.Provenance{Dataset: "cifar10", Kind: data.KindSynthetic}
	real := &data.Provenance{Dataset: "cifar10", Kind: data.KindVerified}
	h := testHistory()
	run := func(name string, d *data.Provenance, devices int) runs.Info {
		return runs.Info{Name: name, Data: d, Backend: "xla:cpu (XLA CPU plugin)", Devices: devices, History: h}
	}
	for _, c := range []struct {
		name string
		list []runs.Info
		want string
		red  bool
	}{
		{"shared", []runs.Info{run("a", real, 1), run("b", real, 1)},
			"data: real cifar10, verified · machine: xla:cpu (XLA CPU plugin), 1 device", false},
		{"devices differ", []runs.Info{run("one", synth, 1), run("four", synth, 4)},
			"data: SYNTHETIC cifar10 (generated images, not real accuracy) · machine: xla:cpu (XLA CPU plugin), 1 device (one); " +
				"xla:cpu (XLA CPU plugin), 4 devices (four)", true},
		{"data differ", []runs.Info{run("a", real, 1), run("b", synth, 1), run("c", real, 1), {Name: "no-curves", Data: synth}},
			"data: real cifar10, verified (a, c); SYNTHETIC cifar10 (generated images, not real accuracy) (b) · machine: xla:cpu (XLA CPU plugin), 1 device", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := compareCaption(c.list)
			require.Equal(t, []string{c.want}, got.Lines)
			require.Equal(t, c.red, got.Synthetic)
		})
	}
}
