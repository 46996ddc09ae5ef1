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

type update struct{ id, svg, text string }

func (s *recordingSink) Update(id, svg, text string) {
	s.updates = append(s.updates, update{id, svg, text})
}

// texts returns the text alternatives of the updates, in order.
func (s *recordingSink) texts() []string {
	var out []string
	for _, u := range s.updates {
		out = append(out, u.text)
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
	// Drawn at point 2 (t=0.4s, the first with a scale), then once a second has passed since
	// the last drawing: points 5 (1.6s), 8 (2.8s), 11, 14, 17, 20.
	var want []string
	for _, n := range []int{2, 5, 8, 11, 14, 17, 20} {
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
	requireSVG(t, last[0].svg, ">loss<", "train (smoothed)", "SYNTHETIC cifar100")
	requireSVG(t, last[1].svg, ">accuracy<", "train top-5", "SYNTHETIC cifar100")
	require.Equal(t, curveText("loss", 20)+"\n"+testSource.String(), last[0].text)
}

// testSource is a run's source: synthetic CIFAR-100 on XLA CPU with 4 devices.
var testSource = runs.Source{Data: &data.Provenance{Dataset: "cifar100", Kind: data.KindSynthetic},
	Backend: "xla:cpu (XLA CPU plugin)", Devices: 4}

// curveText is the text alternative of a chart of testHistory's first n points, without its caption.
func curveText(name string, n int) string {
	return fmt.Sprintf("%s curve: %d points, to step %d", name, n, n)
}

// notRecorded is the caption of the charts of a History whose source is not known.
const notRecorded = "\ndata: not recorded · machine: not recorded"

func TestLiveFinishWithoutEnoughPoints(t *testing.T) {
	sink := &recordingSink{}
	live := NewLive(sink, 0)
	require.False(t, live.Finish(nil), "nothing to draw")
	require.NoError(t, live.Add(runs.HistoryPoint{Step: 1, Loss: 2}))
	require.Empty(t, sink.updates, "one point has no scale: not drawn")
	require.False(t, live.Finish(nil))
	require.NoError(t, live.Add(runs.HistoryPoint{Step: 2, Loss: 1}))
	require.Len(t, sink.updates, 2, "the second point is drawn at once")
	require.True(t, live.Finish(nil), "Finish(nil) draws the points added")
	l2, a2 := curveText("loss", 2)+notRecorded, curveText("accuracy", 2)+notRecorded
	require.Equal(t, []string{l2, a2, l2, a2}, sink.texts())
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
