package kernel

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/stretchr/testify/require"
)

// TestKernelInstallShowsInJupyterKernelspecList runs the real `cifarlab kernel install`
// into a temporary Jupyter data directory and asks the real Jupyter what it sees.
func TestKernelInstallShowsInJupyterKernelspecList(t *testing.T) {
	repo := testRepo(t)
	requireLab(t, repo)
	bin := cifarlabBinary(t, repo)
	jup, err := findJupyter(repo)
	require.NoError(t, err)
	dataDir := filepath.Join(t.TempDir(), "jupyter")

	run := func(args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Dir = repo.Dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "cifarlab %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	out := run("kernel", "install", "--jupyter-data-dir", dataDir)
	require.Contains(t, out, CPUKernel+` "Go (cifarlab, CPU)" -> `+kernelDir(dataDir, CPUKernel)+" (written;")
	require.Contains(t, out, CUDAKernel+` "Go (cifarlab, CUDA)" -> `+kernelDir(dataDir, CUDAKernel)+" (written;")

	specs, err := jup.KernelSpecs(context.Background(), dataDirEnv(dataDir)...)
	require.NoError(t, err)
	gt, err := findGoTools(context.Background(), repo)
	require.NoError(t, err)
	for name, display := range map[string]string{CPUKernel: cpuDisplayName, CUDAKernel: cudaDisplayName} {
		ls, ok := specs[name]
		require.True(t, ok, "jupyter kernelspec list does not show %s: %v", name, specs)
		require.Equal(t, kernelDir(dataDir, name), ls.ResourceDir)
		require.Equal(t, display, ls.Spec.DisplayName)
		require.Equal(t, []string{repo.Tool("cifarlab-kernel"), "--", repo.Tool("gonb"), "--kernel", "{connection_file}", "--go_work=" + repo.Dir}, ls.Spec.Argv)
		require.Equal(t, "1", ls.Spec.Env[noAutoInstallEnv])
		require.Equal(t, StatusOK, checkKernelSpec(repo, name, specs, gt).Status, "doctor's check of %s", name)
	}
	require.Equal(t, "cpu", specs[CPUKernel].Spec.Env[kernelEnv])
	require.Equal(t, "cuda", specs[CUDAKernel].Spec.Env[kernelEnv])

	// Twice is harmless.
	out = run("kernel", "install", "--jupyter-data-dir", dataDir)
	require.Equal(t, 2, strings.Count(out, "(unchanged;"), out)

	out = run("kernel", "uninstall", "--jupyter-data-dir", dataDir)
	require.Contains(t, out, "removed "+filepath.Join(kernelDir(dataDir, CPUKernel), "kernel.json"))
	specs, err = jup.KernelSpecs(context.Background(), dataDirEnv(dataDir)...)
	require.NoError(t, err)
	require.NotContains(t, specs, CPUKernel)
	require.NotContains(t, specs, CUDAKernel)
	entries, err := os.ReadDir(dataDir) // jupyter kernelspec list recreates the folder itself
	if err == nil {
		require.Empty(t, entries, "uninstall removes everything it wrote")
	}
}

// notebookRun is the JSON summary written by kernel/run_notebook.py.
type notebookRun struct {
	OK          bool    `json:"ok"`
	Fatal       *string `json:"fatal"`
	FailedCells []int   `json:"failed_cells"`
	WallS       float64 `json:"wall_s"`
	Cells       []struct {
		Index   int     `json:"index"`
		Status  string  `json:"status"`
		Seconds float64 `json:"seconds"`
		Stdout  string  `json:"stdout"`
		Stderr  string  `json:"stderr"`
		Text    string  `json:"text"` // Display data: text/plain, or text/html without its tags.
		Error   *struct {
			Ename  string `json:"ename"`
			Evalue string `json:"evalue"`
		} `json:"error"`
	} `json:"cells"`
}

// runNotebook executes a notebook through the real kernel with nbclient
// (kernel/run_notebook.py) and returns its summary.
func runNotebook(t *testing.T, repo Repo, dataDir, notebook, kernelName string, env ...string) notebookRun {
	t.Helper()
	py := requireLab(t, repo)
	dir := t.TempDir()
	summary, klog := filepath.Join(dir, "summary.json"), filepath.Join(dir, "kernel.log")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join(repo.Dir, "kernel", "run_notebook.py"), notebook,
		"--kernel", kernelName, "--first-timeout", "900", "--timeout", "120",
		"--summary", summary, "--kernel-log", klog, "--out", filepath.Join(dir, "executed.ipynb"))
	cmd.Env = append(append(os.Environ(), dataDirEnv(dataDir)...), env...)
	out, err := cmd.CombinedOutput()
	var run notebookRun
	data, rerr := os.ReadFile(summary)
	if rerr != nil {
		logData, _ := os.ReadFile(klog)
		t.Fatalf("run_notebook.py wrote no summary (%v, %v):\n%s\nkernel log:\n%s", err, rerr, out, logData)
	}
	require.NoError(t, json.Unmarshal(data, &run))
	t.Logf("%s with %s: %.1f s wall, cells %v", filepath.Base(notebook), kernelName, run.WallS, cellTimes(run))
	if run.Fatal != nil {
		logData, _ := os.ReadFile(klog)
		t.Logf("fatal: %s\nkernel log:\n%s", *run.Fatal, logData)
	}
	return run
}

func cellTimes(r notebookRun) []string {
	var s []string
	for _, c := range r.Cells {
		s = append(s, c.Status+" "+time.Duration(c.Seconds*float64(time.Second)).Round(10*time.Millisecond).String())
	}
	return s
}

// installKernels installs both kernels of the checkout into a fresh data directory.
func installKernels(t *testing.T, repo Repo) string {
	t.Helper()
	requireLab(t, repo)
	dataDir := filepath.Join(t.TempDir(), "jupyter")
	_, err := Install(context.Background(), InstallOptions{Repo: repo, DataDir: dataDir, Log: testWriter{t}})
	require.NoError(t, err)
	return dataDir
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestSmokeNotebook executes kernel/testdata/smoke.ipynb through the real GoNB kernel:
// with the CPU kernelspec it must compile against the working tree (cifarlib from this
// checkout, GoMLX at go.mod's version) and run a forward pass; with the CUDA kernelspec on
// a machine without a GPU the forward-pass cell must fail fast with cifarlib's message.
func TestSmokeNotebook(t *testing.T) {
	repo := testRepo(t)
	dataDir := installKernels(t, repo)
	notebook := filepath.Join(repo.Dir, "kernel", "testdata", "smoke.ipynb")
	mod, err := readGoMod(filepath.Join(repo.Dir, "go.mod"))
	require.NoError(t, err)

	checkSetupCell := func(t *testing.T, run notebookRun, kernelKind, backend string) {
		require.Len(t, run.Cells, 2)
		c := run.Cells[0]
		require.Equal(t, "ok", c.Status, "setup cell: %+v", c)
		q := regexp.QuoteMeta
		goXLA := filepath.Join(repo.Dir, "third_party", "go-xla")
		require.Regexp(t, "^"+strings.Join([]string{
			q("kernel: " + kernelKind),
			q("GOMLX_BACKEND: " + backend),
			q("cifarlib source: " + filepath.Join(repo.Dir, "cifarlib", "data", "spec.go")),
			q("module github.com/cifarlab/cifarlab: (devel)"),
			q("module github.com/gomlx/gomlx: " + mod.Require["github.com/gomlx/gomlx"]),
			q("module github.com/gomlx/compute: " + mod.Require["github.com/gomlx/compute"]),
			// go.mod's replace: the checkout's patched copy (third_party/README.md), by a path
			// relative to the cell's module, GoNB's folder in the kernel's TMPDIR (this test's).
			q("module github.com/gomlx/go-xla: "+mod.Require["github.com/gomlx/go-xla"]+" => ") + q(relFromCell(t, goXLA)),
			q("dataset: cifar10 (10 classes)"),
		}, "\n")+"\n$", c.Stdout)
	}

	t.Run("cpu", func(t *testing.T) {
		// A hostile Go environment in the server's environment must not break GoNB's builds: the
		// kernelspec pins it (goEnvPins). GOWORK=off would stop its go.work, GOFLAGS=-mod=mod is
		// rejected in workspace mode, CGO_ENABLED=0 cannot build go-xla, GO111MODULE=off no modules;
		// GOTOOLCHAIN=local would build with whatever go the server's PATH has first (an older
		// one on many machines): the kernels set go.mod's toolchain and its bin/ themselves.
		run := runNotebook(t, repo, dataDir, notebook, CPUKernel,
			"GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0", "GO111MODULE=off", "GOTOOLCHAIN=local")
		// The CPU kernel runs what backends.New("cpu") picks: the XLA CPU plugin that
		// kernel/setup.sh installs into .venv, else the pure-Go backend.
		cpu, err := chooseCPUBackend(repo, BackendOptions{})
		require.NoError(t, err)
		checkSetupCell(t, run, "cpu", cpu.GoMLX)
		c := run.Cells[1]
		require.Equal(t, "ok", c.Status, "forward-pass cell: %+v", c)
		backendName := "go (pure Go, CPU)"
		if cpu.GoMLX != "go" {
			backendName = "xla:cpu (XLA CPU plugin)"
		}
		require.Equal(t, "backend: "+backendName+"\nmodel: cnn for cifar10 (10 classes)\nlogits shape: [8 10]\nlogits finite: true\n", c.Stdout)
		require.True(t, run.OK)
	})

	t.Run("cuda", func(t *testing.T) {
		spec := readSpec(t, dataDir, CUDAKernel)
		// With PyPI's jax-cuda13-pjrt in .venv (kernel/setup.sh), the kernelspec loads the real
		// plugin, through a link go-xla finds by name.
		plugin := realCUDAPlugin(t, repo)
		if plugin != "" {
			link, err := filepath.EvalSymlinks(filepath.Join(spec.Env[pjrtPluginPathEnv], "pjrt_c_api_cuda_plugin.so"))
			require.NoError(t, err, "the CUDA kernelspec does not point at the installed plugin: %v", spec.Env)
			require.Equal(t, plugin, link)
		}
		run := runNotebook(t, repo, dataDir, notebook, CUDAKernel)
		checkSetupCell(t, run, "cuda", spec.Env[gomlxBackendEnv])
		c := run.Cells[1]
		if gpus, err := plugins.GPUs(context.Background()); err == nil && len(gpus) > 0 {
			require.Equal(t, "ok", c.Status, "forward pass on %v: %+v", gpus, c)
			require.Contains(t, c.Stdout, "backend: xla:cuda")
			require.Contains(t, c.Stdout, "logits shape: [8 10]\nlogits finite: true\n")
			return
		}
		require.Equal(t, "error", c.Status, "without a GPU the CUDA kernel's forward pass must fail: %+v", c)
		require.NotNil(t, c.Error)
		require.Contains(t, c.Stderr, `backend "xla:cuda" unavailable: no NVIDIA GPU on this machine (`)
		require.Contains(t, c.Stderr, "check for the GPU and its driver with `nvidia-smi -L`; without a GPU use the CPU: "+
			`the "Go (cifarlab, CPU)" kernel`)
		if plugin != "" {
			require.Contains(t, c.Stderr, "the CUDA PJRT plugin is installed (jax-cuda13-pjrt 0.11.2) but needs a GPU", "the plugin by name, not by a path of this machine")
		}
		for _, raw := range []string{"invalid state", "nvidia/ subdirectory", "cudart_stub", "PJRT error"} {
			require.NotContains(t, c.Stderr, raw, "go-xla's or the plugin's own text reached the cell")
		}
		require.Equal(t, []int{c.Index}, run.FailedCells)
	})
}

func readSpec(t *testing.T, dataDir, name string) KernelSpec {
	t.Helper()
	var s KernelSpec
	readJSON(t, filepath.Join(kernelDir(dataDir, name), "kernel.json"), &s)
	return s
}

// relFromCell returns path relative to a cell's module: GoNB's folder, gonb_ID in the kernel's
// TMPDIR, which the test's kernels inherit.
func relFromCell(t *testing.T, path string) string {
	t.Helper()
	rel, err := filepath.Rel(filepath.Join(os.TempDir(), "gonb_cell"), path)
	require.NoError(t, err)
	return rel
}
