package cifarlib

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// withNotebookOutput redirects NotebookOutput to a buffer for one test.
func withNotebookOutput(t *testing.T) *bytes.Buffer {
	t.Helper()
	require.False(t, InNotebook(), "these tests must not run inside a GoNB cell ($GONB_PIPE is set)")
	var buf bytes.Buffer
	old := NotebookOutput
	NotebookOutput = &buf
	t.Cleanup(func() { NotebookOutput = old })
	return &buf
}

func TestDisplayOutsideNotebookWritesText(t *testing.T) {
	buf := withNotebookOutput(t)
	DisplayHTML("<b>head: 10 outputs</b>", "head: 10 outputs")
	DisplaySVG("<svg></svg>", "label histogram")
	DisplayPNG([]byte{0x89, 'P', 'N', 'G'}, "")
	require.Equal(t, "head: 10 outputs\nlabel histogram\n", buf.String())
}

func TestLabelHistogramSVGHighlightsLabelsBeyondHead(t *testing.T) {
	svg := LabelHistogramSVG("labels <train>", []int{3, 0, 5, 1}, 2)
	require.True(t, strings.HasPrefix(svg, `<svg xmlns="http://www.w3.org/2000/svg"`))
	require.True(t, strings.HasSuffix(svg, "</svg>"))
	require.Contains(t, svg, `>labels &lt;train&gt;</text>`, "title must be escaped")
	// Plot area: x from 60 to 700 (4 slots of 160), y from 40 to 250 (210 high); top of scale 5.
	require.Contains(t, svg, `<rect x="60.50" y="124.00" width="159.00" height="126.00" fill="#4c78a8"><title>label 0: 3</title></rect>`)
	require.Contains(t, svg, `<rect x="220.50" y="250.00" width="159.00" height="0.00" fill="#4c78a8"><title>label 1: 0</title></rect>`)
	require.Contains(t, svg, `<rect x="380.50" y="40.00" width="159.00" height="210.00" fill="#e45756"><title>label 2: 5</title></rect>`)
	require.Contains(t, svg, `<rect x="540.50" y="208.00" width="159.00" height="42.00" fill="#e45756"><title>label 3: 1</title></rect>`)
	require.Contains(t, svg, `labels &gt;= 2: no output of a 2-wide head`)
	require.Equal(t, 2, strings.Count(svg, `fill="#e45756"><title>`))
}

func TestLabelHistogramSVGWithoutMismatchHasNoHighlight(t *testing.T) {
	for _, head := range []int{0, 4, 10} {
		svg := LabelHistogramSVG("labels", []int{3, 0, 5, 1}, head)
		require.NotContains(t, svg, svgHighlightColour, "head %d", head)
		require.Equal(t, 4, strings.Count(svg, `fill="#4c78a8"><title>label`), "head %d", head)
	}
	empty := LabelHistogramSVG("no labels", nil, 10)
	require.Contains(t, empty, "no labels")
	require.NotContains(t, empty, "<title>label")
}

func TestLineChartSVG(t *testing.T) {
	svg := LineChartSVG("loss & accuracy", "step", "value",
		Series{Name: "loss <train>", X: []float64{0, 10, 20}, Y: []float64{4, 2, 1}},
		Series{Name: "accuracy", X: []float64{0, 20}, Y: []float64{0.1, 0.8}})
	require.Contains(t, svg, `>loss &amp; accuracy</text>`)
	require.Contains(t, svg, `>loss &lt;train&gt;</text>`)
	// x spans 0..20 over 60..700; y spans 0..5 (niceCeil(4)=5) over 250..40.
	require.Contains(t, svg, `<polyline fill="none" stroke="#4c78a8" stroke-width="2" points="60.0,82.0 380.0,166.0 700.0,208.0"/>`)
	require.Contains(t, svg, `<polyline fill="none" stroke="#f58518" stroke-width="2" points="60.0,245.8 700.0,216.4"/>`)
	require.Equal(t, 5, strings.Count(svg, "<circle "))

	// A long series is drawn as a line without dots; one with a negative x keeps its own range.
	long := Series{Name: "long"}
	for i := range 41 {
		long.X, long.Y = append(long.X, float64(i-20)), append(long.Y, 1)
	}
	svg = LineChartSVG("long", "x", "y", long)
	require.Equal(t, 0, strings.Count(svg, "<circle "))
	require.Contains(t, svg, `points="60.0,40.0 76.0,40.0 `, "x from -20 (at 60) by steps of 16 units")
	require.Contains(t, svg, ` 700.0,40.0"/>`)
}

func TestRecordPNGAndImageGridSVG(t *testing.T) {
	spec := CIFAR10()
	recs := NewRecords(spec, "in-memory", 2)
	recs.RawLabels[0], recs.RawLabels[1] = 3, 9
	const plane = ImageHeight * ImageWidth
	img1 := recs.Image(1)
	img1[0], img1[plane], img1[2*plane] = 200, 100, 50 // pixel (0,0) of example 1
	img1[plane-1] = 255                                // red of pixel (31,31)

	data, err := RecordPNG(recs, 1)
	require.NoError(t, err)
	decoded, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	require.Equal(t, 32, decoded.Bounds().Dx())
	r, g, b, a := decoded.At(0, 0).RGBA()
	require.Equal(t, []uint32{200, 100, 50, 255}, []uint32{r >> 8, g >> 8, b >> 8, a >> 8})
	r, g, b, _ = decoded.At(31, 31).RGBA()
	require.Equal(t, []uint32{255, 0, 0}, []uint32{r >> 8, g >> 8, b >> 8})

	svg, err := ImageGridSVG(recs, []int{0, 1, 1}, 2)
	require.NoError(t, err)
	require.Contains(t, svg, `width="240" height="258"`) // 2 columns of 120, 2 rows of 125 + 8
	require.Contains(t, svg, `>3: cat</text>`)
	require.Equal(t, 2, strings.Count(svg, `>9: truck</text>`))
	m := regexp.MustCompile(`href="data:image/png;base64,([^"]+)"`).FindAllStringSubmatch(svg, -1)
	require.Len(t, m, 3)
	embedded, err := base64.StdEncoding.DecodeString(m[1][1])
	require.NoError(t, err)
	require.Equal(t, data, embedded)

	_, err = ImageGridSVG(recs, []int{2}, 2)
	require.ErrorContains(t, err, "example 2 out of range [0, 2) of in-memory")
	_, err = ImageGridSVG(recs, []int{0}, 0)
	require.ErrorContains(t, err, "0 columns")
	_, err = RecordPNG(recs, -1)
	require.ErrorContains(t, err, "example -1 out of range")
}

func TestNiceCeilAndFormatTick(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{0, 0}, {-3, 0}, {1, 1}, {4, 5}, {5, 5}, {6, 10}, {11, 20}, {21, 25}, {26, 50}, {0.37, 0.5}, {4.61, 5}, {101, 200},
	} {
		require.InDelta(t, c.want, niceCeil(c.in), 1e-12, "niceCeil(%v)", c.in)
	}
	require.Equal(t, "250", formatTick(250))
	require.Equal(t, "0.125", formatTick(0.125))
	require.Equal(t, "1.23", formatTick(1.2345))
}

func TestNotebookArch(t *testing.T) {
	goBackend, err := NewBackend(BackendGo)
	require.NoError(t, err)
	require.Equal(t, ArchLinear, NotebookArch(goBackend))
	require.Equal(t, ArchLinear, NotebookArch(nil))
	// "cpu" is XLA's CPU plugin where one is installed: convolutions are fast there.
	if cpu, err := NewBackend(BackendCPU); err == nil && strings.HasPrefix(BackendName(cpu), "xla:") {
		require.Equal(t, ArchCNN, NotebookArch(cpu))
	}
}

func TestHistorySVGs(t *testing.T) {
	h := &History{Points: []HistoryPoint{
		{Step: 10, MovingLoss: 4, Accuracy: 0.1},
		{Step: 20, MovingLoss: 2, Accuracy: 0.4, Eval: &EvalPoint{Examples: 500, Loss: 3, Accuracy: 0.5}},
		{Step: 30, MovingLoss: 1, Accuracy: 0.8},
	}}
	loss := HistoryLossSVG("loss", h)
	// x spans steps 0..50 (the round number above 30) over 60..700; y spans 0..5 over 250..40.
	require.Contains(t, loss, `points="188.0,82.0 316.0,166.0 444.0,208.0"`, "train loss (moving average)")
	require.Contains(t, loss, `<circle cx="316.0" cy="124.0" r="2.5" fill="#f58518"/>`, "the one test-loss point")
	// The second legend entry starts after the first one's 27 characters.
	require.Contains(t, loss, `<rect x="279.5" y="24.0" width="10" height="10" fill="#f58518"/>`)
	require.Contains(t, loss, ">train loss (moving average)</text>")
	require.Contains(t, loss, ">test loss</text>")

	acc := HistoryAccuracySVG("accuracy", h)
	// Percentages 10, 40, 80 (train) and 50 (test) on a 0..100 axis.
	require.Contains(t, acc, `points="188.0,229.0 316.0,166.0 444.0,82.0"`)
	require.Contains(t, acc, `<circle cx="316.0" cy="145.0" r="2.5" fill="#f58518"/>`)
	require.Contains(t, acc, ">accuracy %</text>")

	noEval := HistoryLossSVG("loss", &History{Points: []HistoryPoint{{Step: 1, MovingLoss: 2}}})
	require.NotContains(t, noEval, "test loss")
	require.Equal(t, 1, strings.Count(noEval, "<circle "))
	require.NotContains(t, HistoryAccuracySVG("empty", nil), "<circle ")
}
