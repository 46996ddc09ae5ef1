package cifarlib

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/train/loss"
	"github.com/stretchr/testify/require"
)

func TestNewBackendGo(t *testing.T) {
	b, err := NewBackend("go")
	require.NoError(t, err)
	require.Equal(t, "go (pure Go, CPU)", BackendName(b))
	require.Equal(t, "<no backend>", BackendName(nil))
}

// xlaCPUPluginOrSkip returns the installed XLA CPU plugin; without one it skips the test, or
// fails it when CI asks for the plugin (CI=true and CIFARLAB_REQUIRE_XLA_CPU=1).
func xlaCPUPluginOrSkip(t *testing.T) PluginLocation {
	t.Helper()
	loc, err := FindXLACPUPlugin()
	require.NoError(t, err)
	if loc.Path == "" {
		if os.Getenv("CI") == "true" && os.Getenv("CIFARLAB_REQUIRE_XLA_CPU") == "1" {
			t.Fatalf("CIFARLAB_REQUIRE_XLA_CPU=1 but no XLA CPU plugin was found: %s", XLACPUInstallHint)
		}
		t.Skip("the XLA CPU plugin is not installed (pip install --no-deps lammps-jax-pjrt-cpu into REPO/.venv)")
	}
	return loc
}

func TestNewBackendCPU(t *testing.T) {
	b, err := NewBackend("cpu")
	require.NoError(t, err)
	loc, err := FindXLACPUPlugin()
	require.NoError(t, err)
	if loc.Path == "" {
		require.Equal(t, "go (pure Go, CPU)", BackendName(b), "without the XLA CPU plugin, cpu is the Go backend")
		require.Equal(t, "", BackendPlugin(b))
		return
	}
	require.Equal(t, "xla:cpu (XLA CPU plugin)", BackendName(b))
	require.Equal(t, loc.Path, BackendPlugin(b))
	require.Equal(t, BatchNormBackendOps, BatchNormFor(b), "XLA has the fused batch-norm ops")
}

// TestNewBackendCPUFindsVenvPlugin: with the plugin pip-installed in the repository's .venv and
// no environment variable, "cpu" and "xla:cpu" load it by absolute path, and "go" stays pure Go.
func TestNewBackendCPUFindsVenvPlugin(t *testing.T) {
	loc := xlaCPUPluginOrSkip(t)
	t.Setenv(XLACPUPluginEnv, "")
	t.Setenv(KernelCPUPluginEnv, "")
	if !loc.Explicit && xlaPlugin("cpu") == "" {
		require.Equal(t, "the venv "+filepath.Join(findRepoDir(), ".venv"), loc.Source)
		require.True(t, strings.HasSuffix(loc.Path, "/site-packages/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so"), loc.Path)
	}
	for _, name := range []string{"cpu", "CPU", "xla:cpu", "xla"} {
		b, err := NewBackend(name)
		require.NoError(t, err, name)
		require.Equal(t, "xla:cpu (XLA CPU plugin)", BackendName(b), name)
		require.True(t, filepath.IsAbs(BackendPlugin(b)), "loaded by absolute path: %q", BackendPlugin(b))
	}
	b, err := NewBackend("go")
	require.NoError(t, err)
	require.Equal(t, "go (pure Go, CPU)", BackendName(b))
	require.Equal(t, "", BackendPlugin(b))
}

// TestXLACPUMatchesGo runs one small graph (convolution, matmul, ReLU, max-pool, batch mean,
// sparse cross-entropy and its gradients) on the XLA CPU plugin and on the pure-Go backend:
// the numbers agree to float32 rounding.
func TestXLACPUMatchesGo(t *testing.T) {
	xlaCPUPluginOrSkip(t)
	xlaB, err := NewBackend("cpu")
	require.NoError(t, err)
	require.Equal(t, "xla:cpu (XLA CPU plugin)", BackendName(xlaB))
	requireSameNumbersAsGo(t, xlaB, 1e-5)
}

// TestCUDAMatchesGo is the same check on XLA CUDA, when a GPU and the CUDA plugin are there
// (bench/gpu.sh runs it). TF32 convolutions and matmuls (XLA's GPU default) keep about 3
// significant digits.
func TestCUDAMatchesGo(t *testing.T) {
	if !HasNvidiaGPU() {
		t.Skip("no NVIDIA GPU")
	}
	b, err := NewBackend("cuda")
	if err != nil {
		t.Skipf("no usable CUDA backend: %v", err)
	}
	require.Contains(t, BackendName(b), "xla:cuda (XLA CUDA")
	requireSameNumbersAsGo(t, b, 5e-3)
}

// requireSameNumbersAsGo compares a small graph's outputs on b with the pure-Go backend's:
// |got-want| <= tol*(1+|want|) element by element.
func requireSameNumbersAsGo(t *testing.T, b compute.Backend, tol float64) {
	t.Helper()
	goB, err := NewBackend("go")
	require.NoError(t, err)
	// Inputs: 2 images 6x6x3, a 3x3x3x4 kernel, a 36x5 dense matrix (after a 2x2 max-pool) and labels.
	x := make([]float32, 2*6*6*3)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.61)) * 0.9
	}
	k := make([]float32, 3*3*3*4)
	for i := range k {
		k[i] = float32(math.Cos(float64(i)*0.37)) * 0.3
	}
	w := make([]float32, 36*5)
	for i := range w {
		w[i] = float32(math.Sin(float64(i)*0.23+1)) * 0.2
	}
	fn := func(x, k, w, labels *graph.Node) []*graph.Node {
		y := graph.Convolve(x, k).PadSame().Done() // [2, 6, 6, 4]
		y = graph.Max(y, graph.ZerosLike(y))       // ReLU
		y = graph.MaxPool(y).Window(2).Done()      // [2, 3, 3, 4]
		flat := graph.Reshape(y, 2, 36)
		logits := graph.Dot(flat, w).Product() // [2, 5]
		lossV := graph.ReduceAllMean(loss.SparseCategoricalCrossEntropyLogits(
			[]*graph.Node{labels}, []*graph.Node{logits}))
		grads := graph.Gradient(lossV, k, w)
		return []*graph.Node{y, logits, lossV, grads[0], grads[1]}
	}
	run := func(b compute.Backend) []*tensors.Tensor {
		outs, err := graph.ExecOnceN(b, fn,
			tensors.FromFlatDataAndDimensions(x, 2, 6, 6, 3), tensors.FromFlatDataAndDimensions(k, 3, 3, 3, 4),
			tensors.FromFlatDataAndDimensions(w, 36, 5), [][]int32{{3}, {1}})
		require.NoError(t, err, BackendName(b))
		return outs
	}
	want, got := run(goB), run(b)
	names := []string{"pooled activations", "logits", "loss", "kernel gradient", "dense gradient"}
	for i, name := range names {
		require.Equal(t, want[i].Shape().Dimensions, got[i].Shape().Dimensions, name)
		wv, gv := tensors.MustCopyFlatData[float32](want[i]), tensors.MustCopyFlatData[float32](got[i])
		requireClose(t, wv, gv, tol, name+" on "+BackendName(b))
		nonZero := 0
		for _, v := range wv {
			if v != 0 {
				nonZero++
			}
		}
		require.Greater(t, nonZero, len(wv)/4, "%s: the test values must not be mostly zero", name)
	}
	// The loss itself, independently: 2 examples, mean of -log softmax at the label.
	lv := want[1].Value().([][]float32)
	var ce float64
	for i, label := range []int{3, 1} {
		ce += crossEntropy64(lv[i], label)
	}
	require.InDelta(t, ce/2, float64(tensors.ToScalar[float32](got[2])), tol)
}

// TestFindXLACPUPluginSearch checks the search order with plugin files made up in temporary
// folders: explicit variable, then the repository's .venv (newest python3.N), then $VIRTUAL_ENV.
func TestFindXLACPUPluginSearch(t *testing.T) {
	if xlaPlugin("cpu") != "" {
		t.Skip("a cpu plugin in go-xla's folders takes precedence over the venvs here")
	}
	touch := func(path string) string {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte("not a real plugin"), 0o644))
		return path
	}
	rel := "site-packages/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so"
	repo := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module "+ModulePath+"\n\ngo 1.26\n"), 0o644))
	touch(filepath.Join(repo, ".venv/lib/python3.9", rel))
	newest := touch(filepath.Join(repo, ".venv/lib/python3.11", rel))
	other := t.TempDir()
	active := touch(filepath.Join(other, "venv/lib/python3.12", rel))
	explicit := touch(filepath.Join(other, "my plugin.so"))

	t.Setenv(XLACPUPluginEnv, "")
	t.Setenv(KernelCPUPluginEnv, "")
	t.Setenv("VIRTUAL_ENV", filepath.Join(other, "venv"))
	t.Setenv(RepoEnv, repo)
	loc, err := FindXLACPUPlugin()
	require.NoError(t, err)
	require.Equal(t, PluginLocation{Path: newest, Source: "the venv " + filepath.Join(repo, ".venv")}, loc)

	t.Setenv(RepoEnv, other) // not a checkout: only $VIRTUAL_ENV is left
	loc, err = FindXLACPUPlugin()
	require.NoError(t, err)
	require.Equal(t, PluginLocation{Path: active, Source: "the active venv $VIRTUAL_ENV=" + filepath.Join(other, "venv")}, loc)

	t.Setenv("VIRTUAL_ENV", "")
	loc, err = FindXLACPUPlugin()
	require.NoError(t, err)
	require.Equal(t, PluginLocation{}, loc)

	// The repository is also found from the working directory upwards.
	t.Setenv(RepoEnv, "")
	t.Chdir(filepath.Join(repo, ".venv/lib"))
	require.Equal(t, repo, findRepoDir())
	loc, err = FindXLACPUPlugin()
	require.NoError(t, err)
	require.Equal(t, newest, loc.Path)

	// An explicit variable wins; the kernel's name works too.
	t.Setenv(KernelCPUPluginEnv, explicit)
	loc, err = FindXLACPUPlugin()
	require.NoError(t, err)
	require.Equal(t, PluginLocation{Path: explicit, Source: "$" + KernelCPUPluginEnv, Explicit: true}, loc)
	t.Setenv(XLACPUPluginEnv, active)
	loc, err = FindXLACPUPlugin()
	require.NoError(t, err)
	require.Equal(t, PluginLocation{Path: active, Source: "$" + XLACPUPluginEnv, Explicit: true}, loc)

	// A variable naming a missing file is an error, for "cpu" too: no silent fallback.
	missing := filepath.Join(other, "gone", "pjrt_c_api_cpu_plugin.so")
	t.Setenv(XLACPUPluginEnv, missing)
	_, err = NewBackend("cpu")
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.True(t, errors.Is(err, ErrBackend))
	require.Equal(t, `backend "cpu" unavailable: the XLA CPU plugin named by $CIFARLAB_XLA_CPU_PLUGIN=`+missing+
		` does not exist (file does not exist): set $CIFARLAB_XLA_CPU_PLUGIN to the absolute path of `+
		`pjrt_c_api_cpu_plugin.so (pip install --no-deps lammps-jax-pjrt-cpu==0.11.2 puts it in `+
		`site-packages/lammps_jax_pjrt_cpu), or unset it`, err.Error())
	_, err = NewBackend("xla:cpu")
	require.ErrorAs(t, err, &be)
	require.Equal(t, "xla:cpu", be.Requested)

	// An explicit file that is not a plugin fails with the loader's error instead of falling back.
	t.Setenv(XLACPUPluginEnv, explicit)
	_, err = NewBackend("cpu")
	require.ErrorAs(t, err, &be)
	require.Equal(t, "XLA could not start plugin "+explicit, be.Missing)
}

func TestPythonMinor(t *testing.T) {
	for path, want := range map[string]int{
		"/v/lib/python3.11/site-packages/x.so": 11, "/v/lib/python3.9/x": 9, "/v/lib/python3/x": -1,
		"/v/lib/python3.1x/x": -1, "/v/lib/x.so": -1} {
		require.Equal(t, want, pythonMinor(path), path)
	}
}

func TestNewBackendAuto(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	b, err := NewBackend("auto")
	require.NoError(t, err)
	require.Equal(t, "go (pure Go, CPU)", BackendName(b))

	t.Setenv("GOMLX_BACKEND", "")
	b, err = NewBackend("")
	require.NoError(t, err)
	if !HasNvidiaGPU() || xlaPlugin("cuda") == "" {
		want := "go (pure Go, CPU)"
		if loc, _ := FindXLACPUPlugin(); loc.Path != "" {
			want = "xla:cpu (XLA CPU plugin)"
		}
		require.Equal(t, want, BackendName(b))
	}

	t.Setenv("GOMLX_BACKEND", "tpu")
	_, err = NewBackend("auto")
	require.EqualError(t, err, `cifarlib: $GOMLX_BACKEND="tpu": backend "tpu" unavailable: unknown backend name: `+
		`use one of "auto", "cpu", "go", "cuda" (or a GoMLX configuration such as "xla:cpu")`)
}

// withGPU overrides the GPU probe for one test.
func withGPU(t *testing.T, present bool) {
	saved := HasNvidiaGPU
	HasNvidiaGPU = func() bool { return present }
	t.Cleanup(func() { HasNvidiaGPU = saved })
}

func TestNewBackendCUDAWithoutGPU(t *testing.T) {
	withGPU(t, false)
	_, err := NewBackend("cuda")
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.True(t, errors.Is(err, ErrBackend))
	require.Equal(t, `backend "cuda" unavailable: no NVIDIA GPU on this machine (no /dev/nvidia* device and `+
		`nvidia-smi finds none): run on a machine with an NVIDIA GPU and its driver, or use -backend cpu`, err.Error())
	_, err = NewBackend("xla:cuda")
	require.ErrorAs(t, err, &be)
	require.Equal(t, "xla:cuda", be.Requested)
}

func TestNewBackendCUDAWithoutPlugin(t *testing.T) {
	if xlaPlugin("cuda") != "" {
		t.Skip("the CUDA PJRT plugin is installed here")
	}
	t.Setenv(CUDAPluginEnv, "")
	withGPU(t, true)
	_, err := NewBackend("cuda")
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.Contains(t, be.Missing, "the CUDA PJRT plugin is not installed (plugins found: ")
	require.Equal(t, CUDAInstallHint, be.Fix)
	require.Contains(t, err.Error(), "go run github.com/gomlx/go-xla/cmd/pjrt_installer@latest -plugin=cuda13")
}

func TestNewBackendNeverDownloads(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	_, err := NewBackend("xla:cpu")
	if loc, _ := FindXLACPUPlugin(); loc.Path == "" {
		require.EqualError(t, err, `backend "xla:cpu" unavailable: the XLA CPU PJRT plugin is not installed: `+XLACPUInstallHint)
	} else {
		require.NoError(t, err)
	}
	_, err = NewBackend("xla:tpu")
	require.EqualError(t, err, `backend "xla:tpu" unavailable: the XLA PJRT plugin "tpu" is not installed `+
		`(found: `+describePlugins()+`): install it with `+"`go run github.com/gomlx/go-xla/cmd/pjrt_installer@latest`"+
		`, set PJRT_PLUGIN_LIBRARY_PATH to its folder, or use -backend go`)
	_, statErr := os.Stat(filepath.Join(home, ".local", "lib", "go-xla"))
	require.True(t, os.IsNotExist(statErr), "NewBackend must not install plugins")
}

func TestCUDAPluginEnv(t *testing.T) {
	withGPU(t, true)
	missing := filepath.Join(t.TempDir(), "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so")
	t.Setenv(CUDAPluginEnv, missing)
	_, err := NewBackend("cuda")
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.Equal(t, `backend "cuda" unavailable: the CUDA PJRT plugin named by $CIFARLAB_CUDA_PLUGIN=`+missing+
		` does not exist (file does not exist): set $CIFARLAB_CUDA_PLUGIN to the absolute path of the plugin `+
		`(e.g. SITE/jax_plugins/xla_cuda13/xla_cuda_plugin.so of pip's jax-cuda13-pjrt), or unset it`, err.Error())
	t.Setenv(CUDAPluginEnv, "")
	t.Setenv("GOMLX_BACKEND", "")
	_, err = NewBackend("xla:" + missing)
	require.ErrorAs(t, err, &be)
	require.Equal(t, "the CUDA PJRT plugin "+missing+" does not exist", be.Missing)
}

// TestJaxCUDADataDir: XLA is pointed at pip's CUDA tools next to jax-cuda13-pjrt's plugin.
func TestJaxCUDADataDir(t *testing.T) {
	site := t.TempDir()
	plugin := filepath.Join(site, "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so")
	require.Equal(t, "", jaxCUDADataDir(plugin), "no nvidia/cu13 tools")
	ptxas := filepath.Join(site, "nvidia", "cu13", "bin", "ptxas")
	require.NoError(t, os.MkdirAll(filepath.Dir(ptxas), 0o755))
	require.NoError(t, os.WriteFile(ptxas, nil, 0o755))
	require.Equal(t, filepath.Join(site, "nvidia", "cu13"), jaxCUDADataDir(plugin))
	require.Equal(t, "", jaxCUDADataDir(filepath.Join(site, "lib", "pjrt_c_api_cuda_plugin.so")))

	t.Setenv("XLA_FLAGS", "--xla_dump_to=/tmp/d")
	setJaxCUDADataDir(plugin)
	require.Equal(t, "--xla_dump_to=/tmp/d --xla_gpu_cuda_data_dir="+filepath.Join(site, "nvidia", "cu13"), os.Getenv("XLA_FLAGS"))
	t.Setenv("XLA_FLAGS", "--xla_gpu_cuda_data_dir=/opt/cuda")
	setJaxCUDADataDir(plugin)
	require.Equal(t, "--xla_gpu_cuda_data_dir=/opt/cuda", os.Getenv("XLA_FLAGS"), "an explicit data dir is kept")
}

func TestNewBackendUnknown(t *testing.T) {
	_, err := NewBackend("tpu")
	require.EqualError(t, err, `backend "tpu" unavailable: unknown backend name: use one of "auto", "cpu", "go", "cuda" `+
		`(or a GoMLX configuration such as "xla:cpu")`)
	_, err = NewBackend("go:bogus_option")
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.Equal(t, "the Go backend rejected its configuration", be.Missing)
}

func TestTranslateRuntimeError(t *testing.T) {
	require.NoError(t, TranslateRuntimeError(nil))
	oom := errors.New("failed to execute graph: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes.\nBufferAssignment OOM Debugging.")
	err := TranslateRuntimeError(oom)
	var dm *DeviceMemoryError
	require.ErrorAs(t, err, &dm)
	require.True(t, errors.Is(err, ErrDeviceMemory))
	require.Same(t, oom, errors.Unwrap(err))
	require.Equal(t, "out of device memory (failed to execute graph: RESOURCE_EXHAUSTED: Out of memory while trying "+
		"to allocate 17179869184 bytes.): use a smaller batch size or model; XLA CUDA preallocates memory only when "+
		"asked: keep -backend \"cuda,preallocate=false\" (the default) or cap it with \"cuda,memory_fraction=0.5\"; "+
		"check that no other process holds the GPU memory (nvidia-smi)", err.Error())

	noDev := errors.New("while creating plugin cuda: INTERNAL: CUDA error: Failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected")
	err = TranslateRuntimeError(noDev)
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.Equal(t, "the CUDA device or driver is not usable", be.Missing)

	other := errors.New("something else")
	require.Same(t, other, TranslateRuntimeError(other))
	require.Same(t, err, TranslateRuntimeError(err), "already translated errors are kept")
}

// TestFindXLACPUPluginGoXLAFolders checks that a "cpu" plugin in go-xla's folders wins over the
// repository's venv. go-xla reads $PJRT_PLUGIN_LIBRARY_PATH once, at process start, so the
// search runs in a child process of this test binary; and go-xla dlopens what it finds, so the
// folder holds a link to the real plugin (the test needs it installed).
func TestFindXLACPUPluginGoXLAFolders(t *testing.T) {
	const childEnv = "CIFARLAB_TEST_CHILD"
	if os.Getenv(childEnv) == "goxla-folders" {
		loc, err := FindXLACPUPlugin()
		fmt.Printf("\nRESULT %s|%s|%v\n", loc.Path, loc.Source, err)
		return
	}
	touch := func(path string) string {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte("not a real plugin"), 0o644))
		return path
	}
	repo := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module "+ModulePath+"\n\ngo 1.26\n"), 0o644))
	touch(filepath.Join(repo, ".venv/lib/python3.11/site-packages/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so"))
	real := xlaCPUPluginOrSkip(t)
	pluginDir := t.TempDir()
	plugin := filepath.Join(pluginDir, "pjrt_c_api_cpu_plugin.so")
	require.NoError(t, os.Symlink(real.Path, plugin))

	cmd := exec.Command(os.Args[0], "-test.run=^TestFindXLACPUPluginGoXLAFolders$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=goxla-folders", "PJRT_PLUGIN_LIBRARY_PATH="+pluginDir,
		RepoEnv+"="+repo, XLACPUPluginEnv+"=", KernelCPUPluginEnv+"=", "VIRTUAL_ENV=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	_, result, found := strings.Cut(string(out), "\nRESULT ")
	require.True(t, found, "child output: %s", out)
	result, _, _ = strings.Cut(result, "\n")
	require.Equal(t, plugin+"|go-xla's plugin folders|<nil>", result)
}
