package backends

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/cifarlab/cifarlab/internal/repo"
	"github.com/stretchr/testify/require"
)

// realCUDAPluginOrSkip returns the xla_cuda_plugin.so of PyPI's jax-cuda13-pjrt that
// kernel/setup.sh installs into the checkout's .venv (kernel/requirements-cuda.txt) on a GPU
// machine, or with CIFARLAB_CUDA=plugin as kernel/run-tests.sh runs it, links resolved. Without
// it the test is skipped, except in CI, where run-tests.sh installs it unless SKIP_CUDA_PLUGIN=1.
func realCUDAPluginOrSkip(t testing.TB) string {
	t.Helper()
	sites, _ := filepath.Glob(filepath.Join(repo.Dir(), ".venv", "lib", "python3*", "site-packages"))
	found := plugins.FindJaxCUDA(sites)
	if len(found) == 0 {
		msg := "PyPI's jax-cuda13-pjrt is not installed in .venv (CIFARLAB_CUDA=plugin bash kernel/setup.sh installs it)"
		if os.Getenv("CI") == "true" && os.Getenv("SKIP_CUDA_PLUGIN") != "1" {
			t.Fatal("CI: " + msg)
		}
		t.Skip(msg)
	}
	real, err := filepath.EvalSymlinks(found[0])
	require.NoError(t, err)
	return real
}

// noGPUMessage is the whole message of a *NoGPUError for this machine.
func noGPUMessage(requested, plugin string) string {
	return `backend "` + requested + `" unavailable: no NVIDIA GPU on this machine (` + plugins.DescribeGPUProbe() +
		`); the CUDA PJRT plugin is installed (` + plugin + `) but needs a GPU: check for the GPU and its driver ` +
		"with `nvidia-smi -L`; without a GPU use the CPU: the \"Go (cifarlab, CPU)\" kernel, or the cpu backend (" +
		`backends.New("cpu"))`
}

// TestNewBackendCUDANoGPURealPlugin: with the real CUDA plugin installed and no GPU, every way
// of asking for CUDA returns the typed no-GPU error, naming the plugin and its version, how to
// check the GPU and the CPU fallback. How fast it fails is BenchmarkNewBackendCUDANoGPU's.
func TestNewBackendCUDANoGPURealPlugin(t *testing.T) {
	if plugins.HasNvidiaGPU() {
		t.Skip("this machine has an NVIDIA GPU (bench/gpu.sh and kernel/gpu-smoke.sh check CUDA there)")
	}
	plugin := realCUDAPluginOrSkip(t)
	desc := "jax-cuda13-pjrt 0.11.2" // a name, not a path of this machine
	t.Setenv("GOMLX_BACKEND", "")
	t.Setenv(plugins.CUDAEnv, plugin)
	for _, name := range []string{"cuda", "CUDA", "cuda,memory_fraction=0.5", "xla:cuda", "xla:" + plugin} {
		b, err := New(name)
		require.Nil(t, b)
		var ne *NoGPUError
		require.ErrorAs(t, err, &ne, name)
		require.True(t, errors.Is(err, ErrNoGPU), name)
		require.True(t, errors.Is(err, ErrBackend), name)
		require.Equal(t, NoGPUError{Requested: name, Checked: plugins.DescribeGPUProbe(), Plugin: desc, PluginPath: plugin}, *ne)
		require.Equal(t, noGPUMessage(name, desc), err.Error())
	}

	// The CUDA kernel: GOMLX_BACKEND=xla:cuda and PJRT_PLUGIN_LIBRARY_PATH on a folder holding a
	// link named as go-xla wants it (kernel.jaxCUDABackend); notebooks call New("auto").
	t.Setenv(plugins.CUDAEnv, "")
	links := filepath.Join(t.TempDir(), "jax_plugins", "xla_cuda13")
	require.NoError(t, os.MkdirAll(links, 0o755))
	require.NoError(t, os.Symlink(plugin, filepath.Join(links, "pjrt_c_api_cuda_plugin.so")))
	t.Setenv(plugins.PJRTPathEnv, links)
	t.Setenv("GOMLX_BACKEND", "xla:cuda")
	_, err := New("auto")
	require.True(t, errors.Is(err, ErrNoGPU))
	require.Equal(t, `backends: $GOMLX_BACKEND="xla:cuda": `+noGPUMessage("xla:cuda", desc), err.Error())
}

// TestNewBackendCUDANoGPUFormat: the message without any CUDA plugin, and with the plugin's own
// words when it finds no GPU while starting.
func TestNewBackendCUDANoGPUFormat(t *testing.T) {
	withGPU(t, false)
	t.Setenv(plugins.CUDAEnv, "")
	t.Setenv(plugins.PJRTPathEnv, t.TempDir())
	t.Setenv(repo.Env, t.TempDir()) // no checkout: no .venv to find a plugin in
	t.Setenv("VIRTUAL_ENV", "")
	_, err := New("cuda")
	require.True(t, errors.Is(err, ErrNoGPU))
	require.Equal(t, `backend "cuda" unavailable: no NVIDIA GPU on this machine (`+plugins.DescribeGPUProbe()+
		`); no CUDA PJRT plugin is installed either: check for the GPU and its driver with `+"`nvidia-smi -L`"+
		`; without a GPU use the CPU: the "Go (cifarlab, CPU)" kernel, or the cpu backend (backends.New("cpu"))`,
		err.Error())

	pluginErr := errors.New("while creating plugin cuda: PJRT error (code=9): No visible GPU devices.\nmore")
	e := &NoGPUError{Requested: "cuda", Checked: "device /dev/nvidia0", Plugin: "P", Err: pluginErr}
	require.Equal(t, `backend "cuda" unavailable: no NVIDIA GPU on this machine (device /dev/nvidia0) (the plugin says: `+
		`while creating plugin cuda: PJRT error (code=9): No visible GPU devices.); the CUDA PJRT plugin is installed (P) `+
		"but needs a GPU: check for the GPU and its driver with `nvidia-smi -L`; without a GPU use the CPU: the "+
		`"Go (cifarlab, CPU)" kernel, or the cpu backend (backends.New("cpu"))`, e.Error())
	require.Same(t, pluginErr, errors.Unwrap(e))
	require.True(t, isNoGPUMessage(pluginErr.Error()))
	require.False(t, isNoGPUMessage("RESOURCE_EXHAUSTED: out of memory"))
}

// TestNewBackendCUDAPluginSeesNoGPU: when the GPU probe is fooled (e.g. a /dev/nvidia0 without a
// usable device), the real plugin is loaded and finds no GPU: that is the same typed error with
// the plugin's words, and go-xla's warning about a missing nvidia/ folder (wrong for pip's
// layout) is not printed. It runs in a child process to see the process's own stderr.
func TestNewBackendCUDAPluginSeesNoGPU(t *testing.T) {
	const childEnv = "CIFARLAB_TEST_CHILD"
	if os.Getenv(childEnv) == "plugin-sees-no-gpu" {
		withGPU(t, true)
		_, err := New("xla:" + os.Getenv(plugins.CUDAEnv))
		var ne *NoGPUError
		fmt.Printf("\nRESULT %v|%v\n", errors.As(err, &ne) && ne.Err != nil, err)
		return
	}
	if plugins.HasNvidiaGPU() {
		t.Skip("this machine has an NVIDIA GPU")
	}
	plugin := realCUDAPluginOrSkip(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestNewBackendCUDAPluginSeesNoGPU$", "-test.count=1")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, plugins.GoXLACUDAChecksEnv+"=") { // cifarlib sets it
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, childEnv+"=plugin-sees-no-gpu", plugins.CUDAEnv+"="+plugin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s\n%s", out, stderr.String())
	_, result, found := strings.Cut(string(out), "\nRESULT ")
	require.True(t, found, "child output: %s", out)
	result, _, _ = strings.Cut(result, "\n")
	require.True(t, strings.HasPrefix(result, `true|backend "xla:`+plugin+`" unavailable: no NVIDIA GPU on this machine (`), result)
	require.Contains(t, result, "(the plugin says: ")
	require.Contains(t, result, "No visible GPU devices")
	require.NotContains(t, stderr.String(), "nvidia/ subdirectory", "go-xla's check is off for pip's layout")
	require.NotContains(t, stderr.String()+result, "invalid state")
}

// BenchmarkNewBackendCUDANoGPU measures how long New("cuda") takes to return the no-GPU
// error with the real CUDA plugin installed and no GPU (the plugin is loaded once per process,
// so every iteration after the first is the GPU probe and the error). Stop 15 measured under
// 1 ms; go-xla's own path fails only when creating the client, after loading 134 MB.
func BenchmarkNewBackendCUDANoGPU(b *testing.B) {
	if plugins.HasNvidiaGPU() {
		b.Skip("this machine has an NVIDIA GPU")
	}
	b.Setenv("GOMLX_BACKEND", "")
	b.Setenv(plugins.CUDAEnv, realCUDAPluginOrSkip(b))
	for b.Loop() {
		if _, err := New("cuda"); !errors.Is(err, ErrNoGPU) {
			b.Fatalf("NewBackend(\"cuda\") without a GPU: got %v, want ErrNoGPU", err)
		}
	}
}

// withGPU overrides the GPU probe for one test.
func withGPU(t *testing.T, present bool) {
	saved := plugins.HasNvidiaGPU
	plugins.HasNvidiaGPU = func() bool { return present }
	t.Cleanup(func() { plugins.HasNvidiaGPU = saved })
}
