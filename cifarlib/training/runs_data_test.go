package training

import (
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/internal/tfevents/tbtest"
	"github.com/stretchr/testify/require"
)

// TestRunRecordsItsData: what a run was trained on is in its result, its run.json, its row of
// the runs table and, as text, in its TensorBoard events, once per start (a resume adds one).
func TestRunRecordsItsData(t *testing.T) {
	runsDir := t.TempDir()
	res, err := trainRun(t, runsDir, "run", func(c *testRun) { c.Run.Steps = 3 })
	require.NoError(t, err)
	require.Equal(t, "synthetic cifar100, 256 train / 80 test images", res.Data.String())
	rec, err := runs.ReadRecord(filepath.Join(runsDir, "run"))
	require.NoError(t, err)
	require.Equal(t, &res.Data, rec.Data)
	info := runs.Read(filepath.Join(runsDir, "run"))
	require.Equal(t, &res.Data, info.Data)
	require.Equal(t, res.Source(), info.Source(), "a chart of the listed run says what one of the result says")
	require.Equal(t, "data: SYNTHETIC cifar100 (generated images, not real accuracy) · machine: "+res.Backend+", 1 device", res.Source().String())

	tbtest.Python(t) // fails in CI, skips elsewhere, without TensorBoard
	_, err = trainRun(t, runsDir, "run", func(c *testRun) { c.Run.Steps = 5 })
	require.NoError(t, err)
	require.Equal(t, map[string][]string{tagData: {res.Data.String(), res.Data.String()}},
		tbtest.ReadTexts(t, filepath.Join(runsDir, "run")))
}
