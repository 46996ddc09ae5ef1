package notebooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/internal/testenv"
	"github.com/stretchr/testify/require"
)

// cpuKernel is the kernelspec the notebooks are checked with (written by `cifarlab kernel install`).
const cpuKernel = "cifarlab-cpu"

// wantNotebooks are the notebooks of the walk-through, in order.
var wantNotebooks = []string{
	"01-reproduce.ipynb",
	"02-move-to-cpu.ipynb",
	"03-inspect-shapes.ipynb",
	"04-fix-the-head.ipynb",
	"05-scale-out.ipynb",
	"06-transfer.ipynb",
	"07-from-pytorch.ipynb",
	"08-real-baseline.ipynb",
}

// repoRoot is the repository root (the test runs in notebooks/).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"))
	return root
}

// need skips (or, in CI, fails) the test when a prerequisite is missing.
func need(t *testing.T, ok bool, what, fix string) {
	t.Helper()
	if ok {
		return
	}
	msg := fmt.Sprintf("%s is missing: %s", what, fix)
	if testenv.InCI() {
		t.Fatal(msg + " (CI is set, so this fails instead of skipping)")
	}
	t.Skip(msg)
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}

// venvPython returns the venv's python after checking that it and the CPU kernelspec exist.
func venvPython(t *testing.T, repo string) string {
	t.Helper()
	python := filepath.Join(repo, ".venv", "bin", "python")
	need(t, fileExists(python), "the Python venv "+filepath.Join(repo, ".venv"), "run kernel/setup.sh (it installs JupyterLab and nbclient)")
	out, err := exec.Command(python, "-m", "jupyter", "kernelspec", "list", "--json").Output()
	require.NoError(t, err, "jupyter kernelspec list")
	var specs struct {
		Kernelspecs map[string]struct {
			ResourceDir string `json:"resource_dir"`
			Spec        struct {
				Metadata struct {
					Cifarlab struct {
						Repo string `json:"repo"`
					} `json:"cifarlab"`
				} `json:"metadata"`
			} `json:"spec"`
		} `json:"kernelspecs"`
	}
	require.NoError(t, json.Unmarshal(out, &specs))
	spec, found := specs.Kernelspecs[cpuKernel]
	need(t, found, "the kernelspec "+cpuKernel, "run `.bin/cifarlab kernel install` (kernel/setup.sh does it)")
	// The notebooks must run this checkout's code, not another clone's (issue 33).
	require.Equal(t, repo, spec.Spec.Metadata.Cifarlab.Repo,
		"the kernelspec %s Jupyter would start (%s) runs another checkout: `.bin/cifarlab doctor` says how to fix it", cpuKernel, spec.ResourceDir)
	return python
}

// notebookEnv is the environment of the notebook runs: synthetic data in a folder of their own
// (the expectations in the notebooks are calibrated on it), never a download.
func notebookEnv(repo string) []string {
	env := os.Environ()
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "CIFARLAB_DATA=") })
	return append(env,
		"CIFARLAB_DATA="+filepath.Join(repo, "out", "notebooks", "data"),
		"GOMLX_NO_AUTO_INSTALL=1",
	)
}

// commandContext is exec.CommandContext in its own process group, killed as a group (the
// Jupyter kernel, gonb and the cell programs go with it) when ctx ends.
func commandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// testContext ends a minute before the test binary's deadline, so a hung notebook is reported
// (with its output so far) instead of killing the whole test binary.
func testContext(t *testing.T) context.Context {
	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-time.Minute))
		t.Cleanup(cancel)
	}
	return ctx
}

// TestNotebooks executes every notebook with the real GoNB kernel ("Go (cifarlab, CPU)")
// through nbclient (nbcheck.py): no error output except in cells tagged raises-exception,
// which must fail with their expected message, and every expectation in the cells' metadata
// (zero per-example losses, the guard's messages, the accuracy floor after the fix) holds.
// The executed notebooks and a JSON report per notebook are written to out/notebooks/.
func TestNotebooks(t *testing.T) {
	if testing.Short() {
		t.Skip("executes the notebooks with the GoNB kernel (minutes); skipped with -short")
	}
	repo := repoRoot(t)
	python := venvPython(t, repo)
	outDir := filepath.Join(repo, "out", "notebooks")
	require.NoError(t, os.MkdirAll(outDir, 0o755))
	ctx := testContext(t)
	for _, name := range wantNotebooks {
		t.Run(strings.TrimSuffix(name, ".ipynb"), func(t *testing.T) {
			report := filepath.Join(outDir, strings.TrimSuffix(name, ".ipynb")+".report.json")
			cmd := commandContext(ctx, python, "nbcheck.py", "--kernel", cpuKernel, "--timeout", "600",
				"--output-dir", outDir, "--report", report, name)
			cmd.Env = notebookEnv(repo)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			t.Logf("nbcheck %s (%s):\n%s", name, time.Since(start).Round(time.Second), out)
			if ctx.Err() != nil {
				t.Fatalf("%s did not finish before the test deadline (raise go test -timeout)", name)
			}
			require.NoError(t, err, "nbcheck failed for %s: see the report above and %s", name, report)
			require.Contains(t, string(out), "PASS "+name)
		})
	}
}

// TestCommittedOutputs checks the notebooks as committed, without running anything: every
// notebook of the walk-through exists, opens with the CPU kernelspec, and carries the outputs
// of one complete top-to-bottom run (notebooks/regenerate.sh writes them): every code cell
// has an execution count, in order, cells tagged raises-exception show an error and no other
// cell does, and every cell that is expected to fail says what text it must show.
func TestCommittedOutputs(t *testing.T) {
	files, err := filepath.Glob("[0-9][0-9]-*.ipynb")
	require.NoError(t, err)
	require.Equal(t, wantNotebooks, files, "the walk-through's notebooks")
	for _, name := range files {
		t.Run(strings.TrimSuffix(name, ".ipynb"), func(t *testing.T) {
			nb := readNotebook(t, name)
			require.Equal(t, 4, nb.NBFormat)
			require.Equal(t, cpuKernel, nb.Metadata.Kernelspec.Name, "%s must open with the CPU kernel", name)
			count := 0
			for i, c := range nb.Cells {
				if c.CellType != "code" {
					continue
				}
				count++
				require.NotNil(t, c.ExecutionCount, "%s cell %d has no execution count: run notebooks/regenerate.sh", name, i)
				require.Equal(t, count, *c.ExecutionCount, "%s cell %d: outputs are not from one top-to-bottom run", name, i)
				raises := slices.Contains(c.Metadata.Tags, "raises-exception")
				hasError := slices.ContainsFunc(c.Outputs, func(o output) bool { return o.OutputType == "error" })
				require.Equal(t, raises, hasError, "%s cell %d: raises-exception tag %v but error output %v", name, i, raises, hasError)
				if raises {
					require.NotEmpty(t, c.Metadata.Cifarlab.Expect, "%s cell %d must say which error text it expects", name, i)
				}
			}
			require.Positive(t, count, "%s has no code cells", name)
		})
	}
}

// notebook is the part of the nbformat 4 JSON that the tests of committed notebooks read.
type notebook struct {
	NBFormat int `json:"nbformat"`
	Metadata struct {
		Kernelspec struct {
			Name string `json:"name"`
		} `json:"kernelspec"`
		Cifarlab struct {
			Data []string `json:"data"` // the data the outputs come from, one line per dataset
		} `json:"cifarlab"`
	} `json:"metadata"`
	Cells []struct {
		CellType       string   `json:"cell_type"`
		Source         []string `json:"source"` // lines, as JupyterLab saves them
		ExecutionCount *int     `json:"execution_count"`
		Metadata       struct {
			Tags     []string `json:"tags"`
			Cifarlab struct {
				Expect []json.RawMessage `json:"expect"`
			} `json:"cifarlab"`
		} `json:"metadata"`
		Outputs []output `json:"outputs"`
	} `json:"cells"`
}

// readNotebook reads a committed notebook (name, in notebooks/).
func readNotebook(t *testing.T, name string) notebook {
	t.Helper()
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	var nb notebook
	require.NoError(t, json.Unmarshal(data, &nb), "%s is not valid JSON", name)
	return nb
}

type output struct {
	OutputType string `json:"output_type"`
}
