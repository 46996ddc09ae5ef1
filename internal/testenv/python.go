package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/repo"
)

// Python returns the repository venv's python, which must import each of modules (kernel/setup.sh
// installs the tests' Python packages from kernel/requirements-test.txt). Without a venv the test
// is skipped; a venv without a module fails the test, so that CI always runs the Python side.
func Python(t testing.TB, modules ...string) string {
	t.Helper()
	python := filepath.Join(repo.Dir(), ".venv", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		t.Skipf("no venv python at %s (run kernel/setup.sh)", python)
	}
	if out, err := exec.Command(python, "-c", "import "+strings.Join(modules, ", ")).CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import %s (%v: %s): run kernel/setup.sh, which installs kernel/requirements-test.txt",
			python, strings.Join(modules, ", "), err, out)
	}
	return python
}
