package kernel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/stretchr/testify/require"
)

// TestCheckCUDALibs: one doctor line per library and tool of the plugin; a missing one is absent
// without a GPU and fails with one, a present one shows its path and pip version.
func TestCheckCUDALibs(t *testing.T) {
	t.Setenv("XLA_FLAGS", "")
	t.Setenv("LD_LIBRARY_PATH", "")
	site := t.TempDir()
	plugin := filepath.Join(site, "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so")
	cudart := filepath.Join(site, "nvidia", "cu13", "lib", "libcudart.so.13")
	meta := filepath.Join(site, "nvidia_cuda_runtime-13.0.96.dist-info", "METADATA")
	for f, body := range map[string]string{plugin: "", cudart: "", meta: "Name: nvidia-cuda-runtime\nVersion: 13.0.96\n"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
		require.NoError(t, os.WriteFile(f, []byte(body), 0o644))
	}

	for _, c := range []struct {
		hasGPU bool
		status Status
		fix    string
	}{{false, StatusAbsent, "optional without a GPU; " + plugins.CUDALibsFix}, {true, StatusFail, plugins.CUDALibsFix}} {
		checks := checkCUDALibs(plugin, c.hasGPU)
		require.Len(t, checks, len(plugins.CUDALibs))
		require.Equal(t, Check{Name: "CUDA lib CUDA runtime", Status: StatusOK,
			Detail: cudart + " (nvidia-cuda-runtime 13.0.96)"}, checks[0])
		require.Equal(t, Check{Name: "CUDA lib cuDNN", Status: c.status, Fix: c.fix,
			Detail: "libcudnn.so.9 not found (looked in " + filepath.Join(site, "nvidia", "cu13", "lib") +
				"): install nvidia-cudnn-cu13 >=9.12.0.46,<10"}, checks[3])
		require.Equal(t, "CUDA tool libdevice", checks[len(checks)-1].Name)
		for _, ch := range checks[1:] {
			require.Equal(t, c.status, ch.Status, ch.Name)
			require.False(t, ch.Required, "the CPU kernel works without them")
		}
	}

	t.Setenv(plugins.CUDASiteEnv, site)
	require.Equal(t, plugin, cudaPluginToCheck([]string{"/other/xla_cuda_plugin.so"}), "$CIFARLAB_CUDA_SITE's plugin first")
	t.Setenv(plugins.CUDASiteEnv, "")
	require.Equal(t, "/other/xla_cuda_plugin.so", cudaPluginToCheck([]string{"/other/xla_cuda_plugin.so"}))

	var text strings.Builder
	Report{Checks: checkCUDALibs(plugin, false)[:1], OK: true}.WriteText(&text)
	require.Equal(t, "[ ok ] CUDA lib CUDA runtime      "+cudart+" (nvidia-cuda-runtime 13.0.96)\n"+
		"doctor: everything required is in place\n", text.String())
}
