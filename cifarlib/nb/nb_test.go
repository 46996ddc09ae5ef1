package nb

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"
)

// captureOutput sends this package's text output to a buffer for the test.
func captureOutput(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	Output = &buf
	t.Cleanup(func() { Output = nil })
	return &buf
}

// TestMain runs the stop-the-cell helpers in a child process when asked to (they exit).
func TestMain(m *testing.M) {
	switch os.Getenv("NB_TEST_CHILD") {
	case "check":
		Check(nil)
		os.Stdout.WriteString("after nil\n")
		Must(0, os.ErrNotExist)
		os.Stdout.WriteString("not reached\n")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestCheckStopsTheCell(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NB_TEST_CHILD=check")
	out, err := cmd.Output()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 1, exit.ExitCode())
	require.Equal(t, "after nil\nerror: file does not exist\n", string(out))
}

// TestCellTime: the cell time says what it leaves out (GoNB's Go build of the cell, before
// the program starts) and how much of it was XLA compilation, as the runs' timelines the cell
// got (Fit, a lab process's evaluation) recorded it.
func TestCellTime(t *testing.T) {
	buf := captureOutput(t)
	saved := xlaCompile.Load()
	t.Cleanup(func() { xlaCompile.Store(saved) })
	xlaCompile.Store(0)
	CellTime()
	require.Regexp(t, `^\(cell time \d+\.\ds; excluded: GoNB's Go build of the cell\)\n$`, buf.String())

	buf.Reset()
	tl := runs.NewTimeline(time.Now())
	began := time.Now()
	tl.Add(runs.PhaseCompile, began, began.Add(1500*time.Millisecond))
	tl.Add(runs.PhaseSteps, began.Add(1500*time.Millisecond), began.Add(3*time.Second))
	tl.Add(runs.PhaseCompile, began.Add(3*time.Second), began.Add(3200*time.Millisecond))
	noteCompile(tl)
	noteCompile(nil)
	CellTime()
	require.Regexp(t, `^\(cell time \d+\.\ds including 1\.7s of XLA compilation; excluded: GoNB's Go build of the cell\)\n$`, buf.String())
}

func testHistory() *runs.History {
	h := &runs.History{TopK: 5}
	for step := 1; step <= 20; step++ {
		p := runs.HistoryPoint{Step: step, Loss: 4 - 0.1*float64(step), MovingLoss: 4.2 - 0.1*float64(step),
			Accuracy: 0.02 * float64(step), TopK: 0.04 * float64(step)}
		if step%10 == 0 {
			p.Eval = &runs.EvalPoint{Examples: 100, Loss: 3, Accuracy: 0.3, TopK: 0.6}
		}
		h.Points = append(h.Points, p)
	}
	return h
}

// requireSVG checks that doc is a well-formed SVG document that contains every text of want.
func requireSVG(t *testing.T, doc string, want ...string) {
	t.Helper()
	require.True(t, strings.HasPrefix(strings.TrimSpace(doc), "<?xml") || strings.HasPrefix(strings.TrimSpace(doc), "<svg"), doc[:min(80, len(doc))])
	dec := xml.NewDecoder(strings.NewReader(doc))
	for {
		_, err := dec.Token()
		if err != nil {
			require.Equal(t, "EOF", err.Error(), "the SVG is not well-formed XML")
			break
		}
	}
	for _, w := range want {
		require.Contains(t, doc, w)
	}
}

// TestLiveLossAxisFits: a run's loss chart (the live view's, Show's) fits its y axis to the
// curves as a comparison does, so that a loss going from 2.35 to 1.97 fills the chart rather
// than its top sixth, and names its evaluation points by what they evaluated.
func TestLiveLossAxisFits(t *testing.T) {
	h := &runs.History{}
	for step := 1; step <= 8; step++ {
		loss := 2.35 - 0.38*float64(step-1)/7
		p := runs.HistoryPoint{Step: step, Loss: loss}
		if step%4 == 0 {
			p.Eval = &runs.EvalPoint{Examples: 500, Split: "test", Loss: loss + 0.01, TTA: 0}
		}
		h.Add(p)
	}
	p, err := LossChart(h)
	require.NoError(t, err)
	span := p.Y.Max - p.Y.Min
	require.Greater(t, p.Y.Min, 1.8, "the axis starts near the data, not at 0")
	require.Greater(t, (2.36-1.97)/span, 0.8, "the curves fill the chart: axis [%g, %g]", p.Y.Min, p.Y.Max)
	svg, err := SVG(p)
	require.NoError(t, err)
	requireSVG(t, svg, ">test: 500 images, no TTA<")
}

func TestHistoryCharts(t *testing.T) {
	h := testHistory()
	p, err := LossChart(h)
	require.NoError(t, err)
	svg, err := SVG(p)
	require.NoError(t, err)
	requireSVG(t, svg, ">loss<", ">step<", "train (smoothed)", ">test: 100 images, no TTA<", svgFontFallbacks)
	require.NotContains(t, svg, "Serif")

	p, err = AccuracyChart(h)
	require.NoError(t, err)
	svg, err = SVG(p)
	require.NoError(t, err)
	requireSVG(t, svg, ">accuracy<", "train top-5", "test top-5", ">test: 100 images, no TTA<")

	// Without evaluations and top-5 there is no test series and no top-5 series.
	h = &runs.History{Points: []runs.HistoryPoint{{Step: 1, Loss: 1}, {Step: 2, Loss: 0.5}}}
	p, err = AccuracyChart(h)
	require.NoError(t, err)
	svg, err = SVG(p)
	require.NoError(t, err)
	require.NotContains(t, svg, "top-")
	require.NotContains(t, svg, ">test<")
}

func TestLabelChartMarksLabelsBeyondHead(t *testing.T) {
	s := data.SplitLabels{Source: "x", Count: 6, Min: 0, Max: 3, Histogram: []int{1, 2, 2, 1}, HeadWidth: 2}
	p, err := LabelChart("labels", s)
	require.NoError(t, err)
	svg, err := SVG(p)
	require.NoError(t, err)
	requireSVG(t, svg, ">labels<", "labels &gt;= 2: beyond the head", "labels &lt; 2")
	require.Contains(t, svg, "fill:#E45756", "bars beyond the head are red")

	s.HeadWidth = 4 // a head that fits: no red, no legend
	p, err = LabelChart("labels", s)
	require.NoError(t, err)
	svg, err = SVG(p)
	require.NoError(t, err)
	require.NotContains(t, svg, "no output of the head")
	require.NotContains(t, svg, "fill:#E45756")
}

func synthRecords(t *testing.T, n int) *data.Records {
	t.Helper()
	recs, err := data.SynthesizeRecords(data.CIFAR100(data.LabelsFine), data.SplitTrain,
		data.SynthOptions{Seed: 1, TrainSize: n, TestSize: 1})
	require.NoError(t, err)
	return recs
}

func TestImageGrid(t *testing.T) {
	recs := synthRecords(t, 10)
	img, err := ImageGrid(recs, 6, 4)
	require.NoError(t, err)
	requireSVG(t, img.SVG, svgFontFallbacks)
	require.Equal(t, 6, strings.Count(img.SVG, "<image "), "one embedded picture per example")
	require.Equal(t, 6, strings.Count(img.SVG, ";base64,"), "embedded as data URLs")
	names := make([]string, 6)
	for i := range names {
		names[i] = fmt.Sprintf("%d:%s", recs.Label(i), recs.Spec.ClassName(recs.Label(i)))
	}
	require.Equal(t, "first 6 images of "+recs.Source+": "+strings.Join(names, ", ")+
		"\ndata: SYNTHETIC cifar100 (generated images, not real accuracy)", img.Text)
	require.Contains(t, svgTexts(t, img.SVG), "data: SYNTHETIC cifar100 (generated images, not real accuracy)", "wrapped to the grid's width")
	require.Contains(t, img.SVG, "fill:#B01E1E", "in red")
	require.Empty(t, img.PNG)
	decoded, err := jpeg.Decode(bytes.NewReader(img.JPEG))
	require.NoError(t, err, "photographs as a JPEG")
	require.Equal(t, image.Rect(0, 0, img.Width, img.Height), decoded.Bounds(), "one pixel per CSS pixel")
	require.Less(t, len(img.JPEG), 30_000)
	data, metadata := img.bundle()
	require.Equal(t, img.JPEG, data["image/jpeg"])
	require.Equal(t, map[string]any{"image/jpeg": map[string]any{"width": img.Width, "height": img.Height}}, metadata)

	for _, c := range []struct{ n, cols int }{{0, 4}, {11, 4}, {2, 0}} {
		_, err := ImageGrid(recs, c.n, c.cols)
		require.ErrorContains(t, err, "need 1 to 10 images", "n=%d cols=%d", c.n, c.cols)
	}
}

func TestShowText(t *testing.T) {
	buf := captureOutput(t)
	s := data.SplitLabels{Source: "src", Count: 4, Min: 0, Max: 3, Histogram: []int{1, 1, 1, 1}, BeyondHead: 2, HeadWidth: 2,
		Dataset: "cifar10", Kind: data.KindUnverified}
	Show(s)
	Show(testHistory())
	Show([]cifarlib.Mistake{{Name: "a mistake", Err: &data.LabelRangeError{Batch: 0, BatchSize: 1, NumClasses: 2,
		Bad: []data.BadLabel{{Position: 0, Example: 0, Label: 5}}}}})
	Show(&Image{SVG: "<svg/>", Text: "a picture"})
	Show("plain")
	require.Equal(t, "4 labels (src): 0..3, 4 of 4 classes present; 2 (50%) are >= the head's 2 outputs\n"+
		"data: real cifar10, unverified\n"+
		"loss curve: 20 points, to step 20"+notRecorded+"\n"+
		"accuracy curve: 20 points, to step 20"+notRecorded+"\n"+
		"1. a mistake\n   *data.LabelRangeError: batch 0: 1 of 1 labels out of range [0, 2): position 0 (example 0) label 5: "+
		"labels must be class indices in [0, 2); the labels come from a dataset with more classes than the model's head "+
		"(e.g. CIFAR-100 labels for a 10-class model): build the model and the dataset from the same Spec\n\n"+
		"a picture\nplain\n", buf.String())
}

func TestRunDirNames(t *testing.T) {
	l := &Lab{RunsDir: "/runs"}
	for _, bad := range []string{"", ".", "..", "../x", "a/b", `a\b`, "a b", "é"} {
		_, err := l.RunDir(bad)
		require.ErrorContains(t, err, "use letters, digits", "%q", bad)
	}
	dir, err := l.RunDir("01-unguarded_v1.2")
	require.NoError(t, err)
	require.Equal(t, filepath.Join("/runs", "01-unguarded_v1.2"), dir)
	_, err = (&Lab{}).RunDir("x") // never a path relative to the working directory
	require.ErrorContains(t, err, "the lab has no runs folder")
}

// TestLabFitThenLoad: a run trained by Fit comes back from Load with the same weights, training
// the same run again gives the same weights, and a run never trained is a clear error.
func TestLabFitThenLoad(t *testing.T) {
	buf := captureOutput(t)
	backend, err := backends.New(backends.Go)
	require.NoError(t, err)
	dataDir := t.TempDir()
	t.Setenv(RunsEnv, "")
	spec := data.CIFAR100(data.LabelsFine)
	l, err := New(spec, backend, dataDir)
	require.NoError(t, err)
	require.True(t, l.Synthetic)
	require.Equal(t, cifarlib.ArchLinear, l.Arch)
	require.Equal(t, filepath.Join(dataDir, "runs"), l.RunsDir)
	require.True(t, strings.HasPrefix(l.String(), "SYNTHETIC DATA: no real cifar100 in "+dataDir+", so generated images stand in (in "+
		filepath.Join(dataDir, "synthetic", "cifar-100-binary")+") and accuracies are not real CIFAR accuracy; "+
		"for real data set CIFARLAB_DATA to the folder holding cifar-100-binary/ or cifar-100-python/, or run: cifarlab download --dataset cifar100 --data "+dataDir+"\n"),
		"synthetic data is said first, in words a skimming reader cannot miss: %s", l)
	require.Contains(t, l.String(), "\ndata:    synthetic (see the first line)\nimages:  5000 training and 1000 test images of cifar100 (100 classes)\nlabels:  0..99")

	_, err = l.Load("never")
	require.ErrorIs(t, err, ErrNoRun)
	require.ErrorContains(t, err, `run the cell that trains it (lab.Fit("never", ...)) first`)

	cfg := settingsOf(t, l, map[string]string{"steps": "5", "batch": "16", "seed": "1", "no-eval": "true"})
	res, err := l.Fit("fit", cfg)
	require.NoError(t, err)
	require.Equal(t, 5, res.EndStep)
	require.Regexp(t, `run "fit": trained 5 steps in \d+\.\ds \(start [0-9.]+ s · compile [0-9.]+ s · 5 steps [0-9.]+ s · 1 checkpoint [0-9.]+ s\), saved in `+filepath.Join(dataDir, "runs", "fit"), buf.String())
	b, err := l.Test.Batch(0, 8)
	require.NoError(t, err)
	want, err := res.Logits(b.Images)
	require.NoError(t, err)

	run, err := l.Load("fit")
	require.NoError(t, err)
	got, err := run.Logits(b.Images)
	require.NoError(t, err)
	require.Equal(t, tensors.MustCopyFlatData[float32](want), tensors.MustCopyFlatData[float32](got))
	require.Contains(t, buf.String(), `run "fit": loaded linear for cifar100 (100 classes) at step 5`)

	again, err := l.Fit("fit", cfg) // from scratch, not resumed: same result
	require.NoError(t, err)
	require.False(t, again.Resumed)
	got, err = again.Logits(b.Images)
	require.NoError(t, err)
	require.Equal(t, tensors.MustCopyFlatData[float32](want), tensors.MustCopyFlatData[float32](got))

	require.Equal(t, backends.Name(backend), l.TryBackend(backends.Go))
	require.True(t, strings.HasPrefix(l.TryBackend("no-such-backend"), "error: "))
}

func TestArch(t *testing.T) {
	backend, err := backends.New(backends.Go)
	require.NoError(t, err)
	require.Equal(t, cifarlib.ArchLinear, Arch(backend))
	require.Equal(t, cifarlib.ArchLinear, Arch(nil))
}

// settingsOf is lab l's settings with the named ones set (training.Settings.Apply), as the CLI's
// flags set them.
func settingsOf(t *testing.T, l *Lab, values map[string]string) training.Settings {
	t.Helper()
	s := l.Settings()
	require.NoError(t, s.Apply(values))
	return s
}
