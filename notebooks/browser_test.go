package notebooks_test

import (
	"bytes"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chromiumPath is Debian's Chromium (apt-get install chromium), which the browser test drives.
const chromiumPath = "/usr/bin/chromium"

// TestBrowser runs browser-test/run.mjs: JupyterLab on 127.0.0.1 with a token, driven by
// headless Chromium (playwright-core):
//   - it opens every committed notebook untrusted, as a reader of a clone does: each chart shows
//     (its PNG, or a picture's JPEG), opening marks nothing modified; trusted (the charts show as
//     SVG) and saved, the file is byte for byte the committed one;
//   - a live chart in a real cell shows the loss and accuracy charts, with whole-step ticks and
//     test points that say what they evaluated, after its first point; its loss axis fits the
//     loss, and its saved outputs carry the PNG;
//   - the researcher's loop in real cells: a run says what it compiles before its first step, a
//     re-run with label smoothing changed compiles nothing, lab.Compare's charts are titled "by
//     label smoothing" with the runs named by their values and the validation in the legend, and
//     the runs table has a "label smoothing" column and no empty "test top-5" one; lab.Compare of
//     2, 5 and 10 runs keeps its title whole and its texts inside the chart, its plot at least
//     55% of the width (measured in the browser), and from 5 runs its legend compact;
//   - it runs all cells of 01-reproduce.ipynb, waits for the kernel to go idle and checks that
//     the expected outputs are on the page and that the notebook saved from the browser passes
//     nbcheck.py --check-only.
//
// The screenshots and the saved notebooks are written to out/browser/ (CI artifacts).
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("drives JupyterLab in Chromium (minutes); skipped with -short")
	}
	repo := repoRoot(t)
	python := venvPython(t, repo)
	node, err := exec.LookPath("node")
	need(t, err == nil, "node", "apt-get install nodejs npm (kernel/setup.sh does it)")
	need(t, fileExists(filepath.Join("browser-test", "node_modules", "playwright-core", "package.json")),
		"playwright-core in notebooks/browser-test/node_modules", "run `npm ci` in notebooks/browser-test (kernel/setup.sh does it)")
	need(t, fileExists(chromiumPath), chromiumPath, "apt-get install chromium (kernel/setup.sh does it)")

	outDir := filepath.Join(repo, "out", "browser")
	shot := filepath.Join(outDir, "01-reproduce.png")
	shots := []string{shot, filepath.Join(outDir, "live-first-point.png"), filepath.Join(outDir, "live-final.png"), filepath.Join(outDir, "loop-compare.png")}
	for _, name := range wantNotebooks {
		shots = append(shots, filepath.Join(outDir, strings.TrimSuffix(name, ".ipynb")+"-untrusted.png"))
	}
	for _, s := range shots {
		_ = os.Remove(s)
	}
	ctx := testContext(t)
	cmd := commandContext(ctx, node, "run.mjs")
	cmd.Dir = "browser-test"
	cmd.Env = append(notebookEnv(repo),
		"NOTEBOOK=01-reproduce.ipynb", "OPEN=all", "LIVE=1", "LOOP=1", "KERNEL="+cpuKernel, "PYTHON="+python,
		"CHROMIUM="+chromiumPath, "OUT_DIR="+outDir)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("browser-test/run.mjs (%s):\n%s", time.Since(start).Round(time.Second), out)
	if ctx.Err() != nil {
		t.Fatal("the browser test did not finish before the test deadline (raise go test -timeout)")
	}
	require.NoError(t, err, "the browser test failed; its screenshots and logs are in %s", outDir)
	require.Contains(t, string(out), "PASS: 01-reproduce.ipynb ran in JupyterLab")
	require.Contains(t, string(out), "loop: the re-run compiled nothing")
	require.Contains(t, string(out), "loop: compare charts measured in the browser: 2 runs: plot")
	for _, name := range wantNotebooks {
		require.Regexp(t, "opened-"+regexp.QuoteMeta(name)+`: \d+ chart\(s\) shown as PNG or JPEG untrusted and as SVG trusted; saved unchanged`, string(out))
	}

	for _, s := range shots {
		if strings.HasSuffix(s, "-untrusted.png") && !strings.Contains(string(out), "screenshot: "+s) {
			continue // a notebook without charts
		}
		data, err := os.ReadFile(s)
		require.NoError(t, err, "no screenshot")
		img, err := png.Decode(bytes.NewReader(data))
		require.NoError(t, err, "the screenshot is not a PNG")
		require.Equal(t, 1280, img.Bounds().Dx(), "the screenshot has the browser viewport's width")
	}
}
