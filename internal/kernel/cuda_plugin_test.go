package kernel

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/cifarlab/cifarlab/internal/testenv"
	"github.com/stretchr/testify/require"
)

// realCUDAPlugin returns the xla_cuda_plugin.so of PyPI's jax-cuda13-pjrt that kernel/setup.sh
// installs into the checkout's .venv (kernel/requirements-cuda.txt) on a GPU machine, or with
// CIFARLAB_CUDA=plugin as kernel/run-tests.sh runs it, links resolved, or "" when it is not
// installed; in CI, where run-tests.sh installs it unless SKIP_CUDA_PLUGIN=1, a missing plugin
// fails the test.
func realCUDAPlugin(t *testing.T, repo Repo) string {
	t.Helper()
	found, _ := filepath.Glob(filepath.Join(repo.VenvDir(), "lib", "python3*", "site-packages", "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so"))
	if len(found) == 0 {
		if testenv.InCI() && os.Getenv("SKIP_CUDA_PLUGIN") != "1" {
			t.Fatal("CI: PyPI's jax-cuda13-pjrt is missing from " + repo.VenvDir() + " (kernel/run-tests.sh installs it: CIFARLAB_CUDA=plugin bash kernel/setup.sh)")
		}
		return ""
	}
	real, err := filepath.EvalSymlinks(found[len(found)-1])
	require.NoError(t, err)
	return real
}

// TestDoctorReportsRealCUDAPlugin: with the real plugin in .venv, doctor names it with its pip
// package and version, and reports the GPU as absent (optional) on a machine without one.
func TestDoctorReportsRealCUDAPlugin(t *testing.T) {
	repo := testRepo(t)
	plugin := realCUDAPlugin(t, repo)
	if plugin == "" {
		t.Skip("PyPI's jax-cuda13-pjrt is not installed in .venv (CIFARLAB_CUDA=plugin bash kernel/setup.sh installs it)")
	}
	t.Setenv(pjrtPluginPathEnv, t.TempDir())
	t.Setenv(CUDAPluginEnv, "")
	t.Setenv(plugins.CUDASiteEnv, "")
	t.Setenv("LD_LIBRARY_PATH", "")
	r := Doctor(context.Background(), DoctorOptions{Repo: repo, DataDir: t.TempDir()})
	byName := map[string]Check{}
	for _, c := range r.Checks {
		byName[c.Name] = c
	}
	require.Equal(t, Check{Name: "CUDA plugin", Status: StatusOK, Detail: "jax-cuda13-pjrt 0.11.2 at " + plugin}, byName["CUDA plugin"])
	if !plugins.HasNvidiaGPU() {
		require.Equal(t, StatusAbsent, byName["GPUs"].Status)
		require.False(t, byName["GPUs"].Required)
	}
	// One line per NVIDIA library and tool, searched where the real plugin's RPATH points.
	for _, lib := range plugins.CUDALibs {
		name := "CUDA lib " + lib.Name
		if lib.Tool {
			name = "CUDA tool " + lib.Name
		}
		c, ok := byName[name]
		require.True(t, ok, name)
		if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(plugin))), "nvidia")); err != nil && !plugins.HasNvidiaGPU() {
			require.Equal(t, StatusAbsent, c.Status, name+": no NVIDIA wheels next to the plugin, no GPU")
			require.Contains(t, c.Detail, lib.File+" not found")
		}
	}
}
