package training

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/internal/repo"
	"github.com/cifarlab/cifarlab/internal/tfevents/tbtest"
	"github.com/stretchr/testify/require"
)

// TestTensorBoardServesRuns: `tensorboard --logdir` on a runs folder lists its runs and their
// scalars, and its web page, loaded in headless Chromium, shows them (the screenshot lands in
// out/browser/tensorboard-runs.png). A run the guard stopped has no events, so it is not listed.
func TestTensorBoardServesRuns(t *testing.T) {
	chromium := tbtest.Chromium(t)
	runsDir := t.TempDir()
	for _, name := range []string{"run-one", "run-two"} {
		_, err := trainRun(t, runsDir, name, func(c *testRun) { c.Run.Steps, c.Eval.Every = 20, 10 })
		require.NoError(t, err)
	}
	url := tbtest.Serve(t, runsDir)
	require.Equal(t, []string{"run-one", "run-two"}, tbtest.Runs(t, url, 2))

	out := filepath.Join(repo.Dir(), "out", "browser")
	require.NoError(t, os.MkdirAll(out, 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	shot := filepath.Join(out, "tensorboard-runs.png")
	page := url + "/?darkMode=false#timeseries"
	dom, err := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000",
		"--window-size=1400,900", "--dump-dom", page).Output()
	require.NoError(t, err)
	// The run selector lists both runs; the first cards (groups in name order: final, test,
	// train; the page renders the cards in view) show the evaluations.
	for _, want := range []string{`>\s*run-one\s*<`, `>\s*run-two\s*<`, regexp.QuoteMeta(tagFinalAccuracy), regexp.QuoteMeta(tagTestAccuracy)} {
		require.True(t, regexp.MustCompile(want).Match(dom), "TensorBoard's page, as Chromium renders it, has no %s", want)
	}
	require.NoError(t, exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000",
		"--window-size=1400,900", "--screenshot="+shot, page).Run())
	require.FileExists(t, shot)
}
