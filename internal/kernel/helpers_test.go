package kernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cifarlab/cifarlab/internal/testenv"
	"github.com/stretchr/testify/require"
)

// requireLab returns the lab venv's python. Without the venv the test is skipped with a
// message saying how to enable it, except in CI, where it fails.
func requireLab(t *testing.T, repo Repo) string {
	t.Helper()
	py := filepath.Join(repo.VenvDir(), "bin", "python")
	if fileExists(py) && fileExists(filepath.Join(repo.VenvDir(), "bin", "jupyter")) {
		return py
	}
	msg := "the lab venv " + repo.VenvDir() + " (JupyterLab, nbclient) is missing: run `bash kernel/setup.sh`"
	if testenv.InCI() {
		t.Fatal("CI: " + msg + " before the tests")
	}
	t.Skip(msg + " to run this test")
	return ""
}

var (
	cifarlabOnce sync.Once
	cifarlabBin  string
	cifarlabErr  error
)

// cifarlabBinary builds cmd/cifarlab from the working tree once per test run.
func cifarlabBinary(t *testing.T, repo Repo) string {
	t.Helper()
	cifarlabOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cifarlab-kernel-test-")
		if err != nil {
			cifarlabErr = err
			return
		}
		cifarlabBin = filepath.Join(dir, "cifarlab")
		cmd := exec.Command("go", "build", "-o", cifarlabBin, "./cmd/cifarlab")
		cmd.Dir = repo.Dir
		if out, err := cmd.CombinedOutput(); err != nil {
			cifarlabErr = &buildError{out: string(out), err: err}
		}
	})
	require.NoError(t, cifarlabErr)
	return cifarlabBin
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string {
	return "go build ./cmd/cifarlab: " + e.err.Error() + "\n" + e.out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cifarlabBin != "" {
		os.RemoveAll(filepath.Dir(cifarlabBin))
	}
	os.Exit(code)
}
