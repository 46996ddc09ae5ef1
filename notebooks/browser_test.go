package notebooks_test

import (
	"bytes"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chromiumPath is Debian's Chromium (apt-get install chromium), which the browser test drives.
const chromiumPath = "/usr/bin/chromium"

// TestBrowser runs browser-test/run.mjs: JupyterLab on 127.0.0.1 with a token, headless
// Chromium (playwright-core) opens 01-reproduce.ipynb, runs all cells, waits for the kernel to
// go idle and checks that the expected outputs are on the page and that the notebook saved
// from the browser passes nbcheck.py --check-only. The screenshots and the saved notebook are
// written to out/browser/ (CI artifacts).
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
	_ = os.Remove(shot)
	ctx := testContext(t)
	cmd := commandContext(ctx, node, "run.mjs")
	cmd.Dir = "browser-test"
	cmd.Env = append(notebookEnv(repo),
		"NOTEBOOK=01-reproduce.ipynb", "KERNEL="+cpuKernel, "PYTHON="+python,
		"CHROMIUM="+chromiumPath, "OUT_DIR="+outDir)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("browser-test/run.mjs (%s):\n%s", time.Since(start).Round(time.Second), out)
	if ctx.Err() != nil {
		t.Fatal("the browser test did not finish before the test deadline (raise go test -timeout)")
	}
	require.NoError(t, err, "the browser test failed; its screenshots and logs are in %s", outDir)
	require.Contains(t, string(out), "PASS: 01-reproduce.ipynb ran in JupyterLab")

	data, err := os.ReadFile(shot)
	require.NoError(t, err, "no screenshot")
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err, "the screenshot is not a PNG")
	require.Equal(t, 1280, img.Bounds().Dx(), "the screenshot has the browser viewport's width")
}
