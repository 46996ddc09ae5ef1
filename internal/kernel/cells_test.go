package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// runCells writes cells to files in dir and runs kernel/testdata/script with the lab venv's
// python on them (args first, then the cell files), against the kernels installed in
// jupyterDir, with CIFARLAB_DATA=dir/data; it returns what the script printed.
func runCells(t *testing.T, repo Repo, jupyterDir, dir, script string, args []string, cells ...string) []byte {
	t.Helper()
	py := requireLab(t, repo)
	for i, c := range cells {
		f := filepath.Join(dir, fmt.Sprintf("cell%d.go", i))
		require.NoError(t, os.WriteFile(f, []byte(c), 0o644))
		args = append(args, f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, append([]string{filepath.Join(repo.Dir, "kernel", "testdata", script)}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), dataDirEnv(jupyterDir)...), "CIFARLAB_DATA="+filepath.Join(dir, "data"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s (the kernel's log):\n%s", script, stderr.String())
	return out
}

// cellResult is one cell's output and status, as interrupt_cells.py prints them.
type cellResult struct {
	Text   string `json:"text"`
	Status string `json:"status"`
}

// cellResults decodes what interrupt_cells.py printed for n cells, and logs each cell.
func cellResults(t *testing.T, out []byte, n int) []cellResult {
	t.Helper()
	var res []cellResult
	require.NoError(t, json.Unmarshal(out, &res))
	require.Len(t, res, n)
	for i, c := range res {
		t.Logf("cell %d (%s):\n%s", i, c.Status, c.Text)
	}
	return res
}

// privateCheckout returns a copy of repo's module that a test may edit: go.mod, go.sum, the
// library (cifarlib/, internal/), cmd/, tools/, third_party/ (go.mod's replace) and kernel/testdata/, with the checkout's .venv
// and the tools of its .bin linked (Jupyter and the pinned tools are not copied). Kernels
// installed for the copy build cells against it.
func privateCheckout(t *testing.T, repo Repo) Repo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "checkout")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "kernel"), 0o755))
	for _, rel := range []string{"go.mod", "go.sum", "cifarlib", "internal", "cmd", "tools", "third_party", filepath.Join("kernel", "testdata")} {
		cp := exec.Command("cp", "-a", filepath.Join(repo.Dir, rel), filepath.Join(dir, rel))
		out, err := cp.CombinedOutput()
		require.NoError(t, err, "copying %s: %s", rel, out)
	}
	copied := Repo{Dir: dir}
	require.NoError(t, os.Symlink(repo.VenvDir(), copied.VenvDir()))
	require.NoError(t, os.Mkdir(copied.binDir(), 0o755))
	tools, err := os.ReadDir(repo.binDir())
	require.NoError(t, err)
	for _, tool := range tools {
		if tool.Name() == "cifarlab-kernel" {
			continue // the copy builds its own supervisor: a link would have it overwrite the checkout's
		}
		require.NoError(t, os.Symlink(filepath.Join(repo.binDir(), tool.Name()), filepath.Join(copied.binDir(), tool.Name())))
	}
	require.True(t, isRepo(copied.Dir), "the copy %s is not a checkout", dir)
	return copied
}
