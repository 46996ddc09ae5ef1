package backends

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/cifarlab/cifarlab/internal/testenv"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/stretchr/testify/require"
)

// TestCUDACompileCacheReachesXLA: New("cuda") points XLA at the lab's CUDA compile cache before
// the plugin starts, and XLA accepts those flags. Without a GPU the CUDA plugin stops before it
// reads $XLA_FLAGS, so a child process with the GPU probe fooled creates the CUDA backend (which
// fails: no GPU), then an XLA CPU backend from the same XLA release (lammps-jax-pjrt-cpu and
// jax-cuda13-pjrt 0.11.2), which parses $XLA_FLAGS as it starts and aborts the process on a
// flag it does not know (checked with a made-up flag), and runs a computation. The cache folder
// is keyed by the plugin's version: jax-cuda13-pjrt-VERSION/GPU.
func TestCUDACompileCacheReachesXLA(t *testing.T) {
	const childEnv = "CIFARLAB_TEST_CHILD"
	if os.Getenv(childEnv) == "cuda-cache" {
		withGPU(t, true)
		_, err := New("xla:" + os.Getenv(plugins.CUDAEnv))
		require.ErrorIs(t, err, ErrNoGPU)
		os.Stdout.WriteString("\nFLAGS " + os.Getenv("XLA_FLAGS") + "\n")
		b, err := New("xla:" + os.Getenv(plugins.XLACPUEnv))
		require.NoError(t, err)
		got := graph.MustExecOnce(b, func(x *graph.Node) *graph.Node { return graph.Add(x, x) }, float32(21))
		os.Stdout.WriteString("\nRESULT " + got.String() + "\n")
		return
	}
	if plugins.HasNvidiaGPU() {
		t.Skip("this machine has an NVIDIA GPU: bench/gpu.sh measures the cache there")
	}
	cuda := realCUDAPluginOrSkip(t)
	cpu := testenv.XLACPUPluginOrSkip(t).Path
	run := func(xlaFlags string) (stdout, stderr string, err error) {
		cache := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestCUDACompileCacheReachesXLA$", "-test.count=1", "-test.v")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "XLA_FLAGS=") && !strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, childEnv+"=cuda-cache", plugins.CUDAEnv+"="+cuda, plugins.XLACPUEnv+"="+cpu,
			"XDG_CACHE_HOME="+cache, "XLA_FLAGS="+xlaFlags)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err = cmd.Run()
		return strings.ReplaceAll(out.String(), cache, "CACHE"), errOut.String(), err
	}

	out, stderr, err := run("--xla_cpu_enable_fast_math=false")
	require.NoError(t, err, "%s\n%s", out, stderr)
	dir := "CACHE/cifarlab/xla-cuda/" + plugins.JaxCUDAPackage(cuda)[:len("jax-cuda13-pjrt")] + "-"
	require.Regexp(t, `\nFLAGS --xla_cpu_enable_fast_math=false `+plugins.FlagAutotuneCacheDir+"="+dir+`[^/ ]+/(unknown-gpu|[a-z0-9.+-]+)/autotune\n`,
		out, "the user's flags first, then the cache's")
	require.Contains(t, out, "\nRESULT float32(42)", "the XLA CPU plugin started with those flags and ran")

	out, stderr, err = run("--xla_made_up_flag=1")
	require.Error(t, err, "a flag XLA does not know stops the plugin: %s", out)
	require.Contains(t, stderr, "Unknown flag in XLA_FLAGS: --xla_made_up_flag=1")
	require.NotContains(t, out, "\nRESULT ")

	// Why the kernel cache is left off (see plugins.FlagAutotuneCacheDir): XLA reads
	// --xla_gpu_kernel_cache_file only with module compilation parallelism, which this XLA
	// refuses in $XLA_FLAGS. When a plugin accepts it, this fails: then turn the kernel cache on.
	out, stderr, err = run("--xla_gpu_kernel_cache_file=/dev/null/k --xla_gpu_enable_llvm_module_compilation_parallelism=true")
	require.Error(t, err, "%s", out)
	require.Contains(t, stderr, "Unknown flag in XLA_FLAGS: --xla_gpu_enable_llvm_module_compilation_parallelism=true")
}

// TestCUDACompileCacheFolder: the folder New("cuda") makes is keyed by the plugin's version and
// readable only by the user.
func TestCUDACompileCacheFolder(t *testing.T) {
	cuda := realCUDAPluginOrSkip(t)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("XLA_FLAGS", "")
	withGPU(t, true)
	_, err := New("xla:" + cuda)
	require.ErrorIs(t, err, ErrNoGPU)
	pkg := plugins.JaxCUDAPackage(cuda)
	require.Regexp(t, `^jax-cuda13-pjrt \d+\.\d+`, pkg)
	matches, err := filepath.Glob(filepath.Join(cache, "cifarlab", "xla-cuda", strings.ReplaceAll(pkg, " ", "-"), "*"))
	require.NoError(t, err)
	require.Len(t, matches, 1)
	fi, err := os.Stat(matches[0])
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	require.Contains(t, os.Getenv("XLA_FLAGS"), plugins.FlagAutotuneCacheDir+"="+filepath.Join(matches[0], "autotune"))
}
