package cifarlib

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/cifarlab/cifarlab/internal/repo"
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
func xlaCPUPluginOrSkip(t *testing.T) plugins.Location {
	t.Helper()
	loc, err := plugins.FindXLACPU("")
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
	loc, err := plugins.FindXLACPU("")
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
	t.Setenv(plugins.XLACPUEnv, "")
	t.Setenv(plugins.KernelCPUEnv, "")
	if !loc.Explicit && plugins.GoXLAName("cpu") == "" {
		require.Equal(t, "the venv "+filepath.Join(repo.Dir(), ".venv"), loc.Source)
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
	requireSameNumbersAsGo(t, xlaB, tolReorderOp)
}

// TestCUDAMatchesGo is the same check on XLA CUDA, when a GPU and the CUDA plugin are there
// (bench/gpu.sh runs it). TF32 convolutions and matmuls (XLA's GPU default) keep about 3
// significant digits.
func TestCUDAMatchesGo(t *testing.T) {
	if !plugins.HasNvidiaGPU() {
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
		pre := graph.Convolve(x, k).PadSame().Done() // [2, 6, 6, 4]
		y := graph.Max(pre, graph.ZerosLike(pre))    // ReLU
		y = graph.MaxPool(y).Window(2).Done()        // [2, 3, 3, 4]
		flat := graph.Reshape(y, 2, 36)
		logits := graph.Dot(flat, w).Product() // [2, 5]
		lossV := graph.ReduceAllMean(loss.SparseCategoricalCrossEntropyLogits(
			[]*graph.Node{labels}, []*graph.Node{logits}))
		grads := graph.Gradient(lossV, k, w)
		return []*graph.Node{y, logits, lossV, grads[0], grads[1], pre}
	}
	run := func(b compute.Backend) []*tensors.Tensor {
		outs, err := graph.ExecOnceN(b, fn,
			tensors.FromFlatDataAndDimensions(x, 2, 6, 6, 3), tensors.FromFlatDataAndDimensions(k, 3, 3, 3, 4),
			tensors.FromFlatDataAndDimensions(w, 36, 5), [][]int32{{3}, {1}})
		require.NoError(t, err, BackendName(b))
		return outs
	}
	want, got := run(goB), run(b)
	requireNoKinks(t, tensors.MustCopyFlatData[float32](want[5]))
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

// requireNoKinks checks that the inputs of requireSameNumbersAsGo keep the graph away from its
// branch points, so that its gradients may be compared element by element on any CPU: no
// ReLU pre-activation within 1e-5 of zero, and in every 2x2 max-pool window of the [2, 6, 6, 4]
// activations the largest value ahead of the next by 1e-5 or an exact tie of zeros (which
// every backend breaks alike). Rounding moves these values by ~1e-7 (tolReorderOp's sums).
func requireNoKinks(t *testing.T, pre []float32) {
	t.Helper()
	const margin = 1e-5
	for i, v := range pre {
		require.Greater(t, math.Abs(float64(v)), margin, "pre-activation %d = %g is near the ReLU kink: change the test inputs", i, v)
	}
	for b := range 2 {
		for y := 0; y < 6; y += 2 {
			for x := 0; x < 6; x += 2 {
				for c := range 4 {
					var vals []float64
					for dy := range 2 {
						for dx := range 2 {
							vals = append(vals, math.Max(0, float64(pre[((b*6+y+dy)*6+x+dx)*4+c]))) // ReLU
						}
					}
					slices.Sort(vals)
					top, next := vals[3], vals[2]
					require.True(t, top-next > margin || top == 0, "max-pool window (%d,%d,%d,%d) has a near tie %g/%g", b, y, x, c, top, next)
				}
			}
		}
	}
}

// TestNewBackendCPUPluginEnv: a variable naming a missing plugin file is an error for "cpu" too (no
// silent fallback), and an explicit file that is not a plugin fails with the loader's error.
// (The search order itself is internal/plugins' TestFindXLACPUPluginSearch.)
func TestNewBackendCPUPluginEnv(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone", "pjrt_c_api_cpu_plugin.so")
	t.Setenv(plugins.XLACPUEnv, missing)
	_, err := NewBackend("cpu")
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

	explicit := filepath.Join(t.TempDir(), "my plugin.so")
	require.NoError(t, os.WriteFile(explicit, []byte("not a real plugin"), 0o644))
	t.Setenv(plugins.XLACPUEnv, explicit)
	_, err = NewBackend("cpu")
	require.ErrorAs(t, err, &be)
	require.Equal(t, "XLA could not start plugin "+explicit, be.Missing)
}

func TestNewBackendAuto(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	b, err := NewBackend("auto")
	require.NoError(t, err)
	require.Equal(t, "go (pure Go, CPU)", BackendName(b))

	t.Setenv("GOMLX_BACKEND", "")
	b, err = NewBackend("")
	require.NoError(t, err)
	if !plugins.HasNvidiaGPU() || plugins.GoXLAName("cuda") == "" {
		want := "go (pure Go, CPU)"
		if loc, _ := plugins.FindXLACPU(""); loc.Path != "" {
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
	saved := plugins.HasNvidiaGPU
	plugins.HasNvidiaGPU = func() bool { return present }
	t.Cleanup(func() { plugins.HasNvidiaGPU = saved })
}

func TestNewBackendCUDAWithoutPlugin(t *testing.T) {
	if plugins.GoXLAName("cuda") != "" {
		t.Skip("the CUDA PJRT plugin is installed here")
	}
	t.Setenv(plugins.CUDAEnv, "")
	withGPU(t, true)
	_, err := NewBackend("cuda")
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.Contains(t, be.Missing, "the CUDA PJRT plugin is not installed (plugins found: ")
	require.Equal(t, plugins.CUDAInstallHint, be.Fix)
	require.Contains(t, err.Error(), "go run github.com/gomlx/go-xla/cmd/pjrt_installer@latest -plugin=cuda13")
}

func TestNewBackendNeverDownloads(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	_, err := NewBackend("xla:cpu")
	if loc, _ := plugins.FindXLACPU(""); loc.Path == "" {
		require.EqualError(t, err, `backend "xla:cpu" unavailable: the XLA CPU PJRT plugin is not installed: `+XLACPUInstallHint)
	} else {
		require.NoError(t, err)
	}
	_, err = NewBackend("xla:tpu")
	require.EqualError(t, err, `backend "xla:tpu" unavailable: the XLA PJRT plugin "tpu" is not installed `+
		`(found: `+plugins.DescribeGoXLA()+`): install it with `+"`go run github.com/gomlx/go-xla/cmd/pjrt_installer@latest`"+
		`, set PJRT_PLUGIN_LIBRARY_PATH to its folder, or use -backend go`)
	_, statErr := os.Stat(filepath.Join(home, ".local", "lib", "go-xla"))
	require.True(t, os.IsNotExist(statErr), "NewBackend must not install plugins")
}

func TestNewBackendCUDAPluginEnv(t *testing.T) {
	withGPU(t, true)
	missing := filepath.Join(t.TempDir(), "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so")
	t.Setenv(plugins.CUDAEnv, missing)
	_, err := NewBackend("cuda")
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.Equal(t, `backend "cuda" unavailable: the CUDA PJRT plugin named by $CIFARLAB_CUDA_PLUGIN=`+missing+
		` does not exist (file does not exist): set $CIFARLAB_CUDA_PLUGIN to the absolute path of the plugin `+
		`(e.g. SITE/jax_plugins/xla_cuda13/xla_cuda_plugin.so of pip's jax-cuda13-pjrt), or unset it`, err.Error())
	t.Setenv(plugins.CUDAEnv, "")
	t.Setenv("GOMLX_BACKEND", "")
	_, err = NewBackend("xla:" + missing)
	require.ErrorAs(t, err, &be)
	require.Equal(t, "the CUDA PJRT plugin "+missing+" does not exist", be.Missing)
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
