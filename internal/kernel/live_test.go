package kernel

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLiveViewUpdatesInPlace trains a run with lab.Fit through the real CPU kernel and reads
// what the cell sent on Jupyter's iopub channel: the live view creates two displays (loss and
// accuracy) at the run's first point and redraws them in place (update_display_data, SVG) while
// training runs; the last update of each is the whole run, with its PNG (what an untrusted
// notebook shows), what a saved notebook keeps.
func TestLiveViewUpdatesInPlace(t *testing.T) {
	repo := testRepo(t)
	jupyterDir := installKernels(t, repo)
	const steps = 150
	out := runCells(t, repo, jupyterDir, t.TempDir(), "display_messages.py", []string{CPUKernel},
		"import (\n\t\"github.com/cifarlab/cifarlab/cifarlib/data\"\n\t\"github.com/cifarlab/cifarlab/cifarlib/nb\"\n\t\"github.com/cifarlab/cifarlab/cifarlib/training\"\n)\n\n"+
			"var lab = nb.Open(data.CIFAR10())\n\n%%\nfmt.Println(lab.Arch)",
		fmt.Sprintf("%%%%\ns := lab.Settings()\ns.Run.Steps, s.Data.BatchSize, s.Run.Seed = %d, 64, 1\nres := nb.Must(lab.Fit(\"live\", s))\nnb.Show(res)", steps))
	type message struct {
		Type, DisplayID, Text string
		MIMEs                 []string
		Metadata              map[string]any
	}
	var raw [][]struct {
		Type      string         `json:"type"`
		DisplayID *string        `json:"display_id"`
		Text      string         `json:"text"`
		MIMEs     []string       `json:"mimes"`
		Metadata  map[string]any `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(out, &raw))
	require.Len(t, raw, 2)

	byID := map[string][]message{}
	var ids []string
	for _, m := range raw[1] {
		require.NotEqual(t, "error", m.Type, "the training cell failed: %+v", raw[1])
		if m.DisplayID == nil || strings.HasPrefix(*m.DisplayID, "cifarlab-status-") { // the cell's status line: labcells_test.go
			continue
		}
		if _, seen := byID[*m.DisplayID]; !seen {
			ids = append(ids, *m.DisplayID)
		}
		byID[*m.DisplayID] = append(byID[*m.DisplayID], message{m.Type, *m.DisplayID, m.Text, m.MIMEs, m.Metadata})
	}
	require.Len(t, ids, 2, "one display for the loss chart, one for the accuracy chart: %+v", raw[1])
	for i, name := range []string{"loss", "accuracy"} {
		ms := byID[ids[i]]
		t.Logf("%s: %d drawings", name, len(ms))
		require.Equal(t, "display_data", ms[0].Type, "the first drawing creates the display")
		// The text alternative: the curve, then the chart's caption (which data, which machine).
		caption := "\ndata: SYNTHETIC cifar10 (generated images, not real accuracy) · machine: "
		require.Regexp(t, "^"+name+` curve: 1 point, to step 1`+regexp.QuoteMeta(caption)+`.+$`, ms[0].Text, "drawn from the first point")
		require.GreaterOrEqual(t, len(ms), 3, "drawn while training, not only at the end")
		for _, m := range ms[1:] {
			require.Equal(t, "update_display_data", m.Type, "later drawings update the same display")
		}
		for _, m := range ms[:len(ms)-1] {
			require.Equal(t, []string{"image/svg+xml", "text/plain"}, m.MIMEs, "a redraw is SVG alone")
		}
		final := ms[len(ms)-1]
		last, _, _ := strings.Cut(final.Text, "\n")
		require.Equal(t, fmt.Sprintf("%s curve: %d points, to step %d", name, steps, steps), last, "the last drawing is the whole run")
		require.Contains(t, final.Text, caption, "the last drawing keeps its caption")
		require.Equal(t, []string{"image/png", "image/svg+xml", "text/plain"}, final.MIMEs, "the last drawing has its PNG")
		size, _ := final.Metadata["image/png"].(map[string]any)
		// 18 cm at 96 dpi, widened so that the plot keeps 70% of it beside the legend
		// ("train", "test: 500 images, no TTA"): nb's chart layout.
		require.Equal(t, 772.0, size["width"], "shown at the SVG's size: %v", final.Metadata)
		require.Greater(t, size["height"], 265.0, "the chart and its caption: %v", final.Metadata)
	}
	// nb.Show(res) prints the summary without drawing the charts again.
	for _, m := range raw[1] {
		require.False(t, m.DisplayID == nil && m.Type == "display_data", "a second, static chart: %+v", m)
	}
}
