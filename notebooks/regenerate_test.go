package notebooks_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// entries lists a folder's tree, to show that nothing was written into it.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		out = append(out, path)
		return err
	}))
	return out
}

// TestRegenerateNamesItsData: notebooks/regenerate.sh runs nothing unless told which data the
// outputs come from, and with a data folder that holds no real data for a notebook's datasets
// (an empty folder, a synthetic one) it refuses the notebook before running it: the notebook
// and the folder are left as they were.
func TestRegenerateNamesItsData(t *testing.T) {
	repo := repoRoot(t)
	venvPython(t, repo)
	cifarlab := filepath.Join(repo, ".bin", "cifarlab")
	need(t, fileExists(cifarlab), cifarlab, "run kernel/setup.sh (it builds the cifarlab command)")
	const name = "08-real-baseline.ipynb"
	before, err := os.ReadFile(name)
	require.NoError(t, err)
	run := func(args ...string) (int, string) { return runInNotebookEnv(t, "./regenerate.sh", args...) }

	code, out := run(name)
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "regenerate.sh: name the data the outputs come from: --data DIR (a folder with real CIFAR), or --synthetic")

	empty := t.TempDir()
	code, out = run("--data", empty, name)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "FAIL "+name)
	require.Contains(t, out, "not run, nothing written: it reads cifar10, and "+empty+" holds no real cifar10 (cifar10: no data)")

	synthetic := t.TempDir()
	b, err := exec.Command(cifarlab, "synth", "--dataset", "cifar10", "--out", synthetic, "--train", "20", "--test", "10").CombinedOutput()
	require.NoError(t, err, "%s", b)
	tree := entries(t, synthetic)
	code, out = run("--data", synthetic, name)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "holds no real cifar10 (cifar10: synthetic (binary layout, 20 train / 10 test images))")
	require.Equal(t, tree, entries(t, synthetic), "nothing written into the data folder")
	require.Equal(t, []string{empty}, entries(t, empty))

	after, err := os.ReadFile(name)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after), "the notebook is not touched")
}
