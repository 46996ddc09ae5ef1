package nb

import (
	"fmt"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"

	"github.com/stretchr/testify/require"
)

// recordingSink keeps every update a live view sends, as a notebook would receive them.
type recordingSink struct{ updates []update }

type update struct {
	id  string
	img *Image
}

func (s *recordingSink) Update(id string, img *Image) {
	s.updates = append(s.updates, update{id, img})
}

// texts returns the text alternatives of the updates, in order.
func (s *recordingSink) texts() []string {
	var out []string
	for _, u := range s.updates {
		out = append(out, u.img.Text)
	}
	return out
}

func TestLiveThrottlesAndAlwaysDrawsTheEnd(t *testing.T) {
	sink := &recordingSink{}
	live := NewLive(sink, 5)
	live.Every = time.Second
	live.Source = testSource
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	live.now = func() time.Time { return clock }
	h := testHistory() // 20 points, one every 0.4 s below
	for _, p := range h.Points {
		require.NoError(t, live.Add(p))
		clock = clock.Add(400 * time.Millisecond)
	}
	// Drawn at the first point (t=0), then once a second has passed since the last drawing:
	// points 4 (1.2s), 7 (2.4s), 10, 13, 16, 19.
	var want []string
	for _, n := range []int{1, 4, 7, 10, 13, 16, 19} {
		want = append(want, curveText("loss", n)+"\n"+testSource.String(), curveText("accuracy", n)+"\n"+testSource.String())
	}
	require.Equal(t, want, sink.texts())

	// Finish draws the run's own history even right after a drawing, in the same two displays.
	require.True(t, live.Finish(h))
	require.Len(t, sink.updates, len(want)+2)
	last := sink.updates[len(sink.updates)-2:]
	require.Equal(t, sink.updates[0].id, last[0].id, "the loss chart is updated in place")
	require.Equal(t, sink.updates[1].id, last[1].id, "the accuracy chart is updated in place")
	require.NotEqual(t, last[0].id, last[1].id)
	requireSVG(t, last[0].img.SVG, ">loss<", "train (smoothed)", "SYNTHETIC cifar100")
	requireSVG(t, last[1].img.SVG, ">accuracy<", "train top-5", "SYNTHETIC cifar100")
	requirePNG(t, last[0].img)
	requirePNG(t, last[1].img)
	for _, u := range sink.updates[:len(want)] {
		require.Empty(t, u.img.PNG, "the redraws are SVG alone")
	}
	require.Equal(t, curveText("loss", 20)+"\n"+testSource.String(), last[0].img.Text)
}

// testSource is a run's source: synthetic CIFAR-100 on XLA CPU with 4 devices.
var testSource = runs.Source{Data: &data.Provenance{Dataset: "cifar100", Kind: data.KindSynthetic},
	Backend: "xla:cpu (XLA CPU plugin)", Devices: 4}

// curveText is the text alternative of a chart of testHistory's first n points, without its caption.
func curveText(name string, n int) string {
	return fmt.Sprintf("%s curve: %s, to step %d", name, plural(n, "point"), n)
}

// notRecorded is the caption of the charts of a History whose source is not known.
const notRecorded = "\ndata: not recorded · machine: not recorded"

// TestLiveFromTheFirstPoint: a live view draws its charts at its first point, at once, with the
// point drawn as a dot (TestStepAxis: its axes), as SVG; Finish adds the PNG; Finish without a
// point draws nothing.
func TestLiveFromTheFirstPoint(t *testing.T) {
	sink := &recordingSink{}
	live := NewLive(sink, 0)
	live.Every = time.Hour
	require.False(t, live.Finish(nil), "nothing to draw")
	require.Empty(t, sink.updates)
	require.NoError(t, live.Add(runs.HistoryPoint{Step: 1, Loss: 2.3, Accuracy: 0.1}))
	require.Len(t, sink.updates, 2, "the first point is drawn at once")
	l1, a1 := "loss curve: 1 point, to step 1"+notRecorded, "accuracy curve: 1 point, to step 1"+notRecorded
	require.Equal(t, []string{l1, a1}, sink.texts())
	for _, u := range sink.updates {
		requireSVG(t, u.img.SVG)
		require.Empty(t, u.img.PNG, "a redraw is SVG alone")
		require.Positive(t, circles(u.img.SVG), "the curve of one point is a dot")
	}
	require.NoError(t, live.Add(runs.HistoryPoint{Step: 2, Loss: 2.1, Accuracy: 0.2}))
	require.Len(t, sink.updates, 2, "throttled: Every has not passed")
	require.True(t, live.Finish(nil), "Finish(nil) draws the points added")
	l2, a2 := curveText("loss", 2)+notRecorded, curveText("accuracy", 2)+notRecorded
	require.Equal(t, []string{l1, a1, l2, a2}, sink.texts())
	require.Zero(t, circles(sink.updates[2].img.SVG), "two points are a line")
	requirePNG(t, sink.updates[2].img) // the last drawing, which the saved notebook keeps, has its PNG
}

// TestShowSkipsChartsDrawnLive: Show of a training.Result whose curves lab.Fit's live view drew
// prints the summary only; any other history gets its charts (outside a notebook, their text
// alternatives).
func TestShowSkipsChartsDrawnLive(t *testing.T) {
	buf := captureOutput(t)
	res := &training.Result{History: testHistory()}
	drawnLive.Store(res.History, struct{}{})
	t.Cleanup(func() { drawnLive.Delete(res.History) })
	Show(res)
	require.NotContains(t, buf.String(), "curve:")
	buf.Reset()
	Show(&training.Result{History: testHistory(), Data: *testSource.Data, Backend: testSource.Backend, Devices: testSource.Devices})
	require.Contains(t, buf.String(), curveText("loss", 20)+"\n"+testSource.String()+"\n"+curveText("accuracy", 20)+"\n"+testSource.String()+"\n",
		"the charts of a result say its data and machine")
}
