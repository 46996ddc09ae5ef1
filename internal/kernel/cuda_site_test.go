package kernel

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/stretchr/testify/require"
)

// TestChooseCUDABackendSite: $CIFARLAB_CUDA_SITE points the CUDA kernel at that site-packages'
// plugin and NVIDIA libraries, and the kernel keeps the setting for cifarlib and doctor in cells.
func TestChooseCUDABackendSite(t *testing.T) {
	site := t.TempDir()
	plugin := filepath.Join(site, "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so")
	ptxas := filepath.Join(site, "nvidia", "cu13", "bin", "ptxas")
	for _, f := range []string{plugin, ptxas} {
		require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
		require.NoError(t, os.WriteFile(f, nil, 0o755))
	}
	t.Setenv(CUDAPluginEnv, "")
	t.Setenv(plugins.CUDASiteEnv, site)
	links := t.TempDir()
	b, err := chooseCUDABackend(context.Background(), fakeRepo(t), links, BackendOptions{})
	require.NoError(t, err)
	require.Equal(t, backend{GoMLX: "xla:cuda", Reason: "CUDA plugin of $CIFARLAB_CUDA_SITE: " + plugin,
		Env: map[string]string{pjrtPluginPathEnv: filepath.Join(links, "jax_plugins", "xla_cuda13"),
			"XLA_FLAGS": "--xla_gpu_cuda_data_dir=" + filepath.Join(site, "nvidia", "cu13"), plugins.CUDASiteEnv: site},
		Links: []link{{Path: filepath.Join(links, "jax_plugins", "xla_cuda13", "pjrt_c_api_cuda_plugin.so"), Target: plugin},
			{Path: filepath.Join(links, "nvidia"), Target: filepath.Join(site, "nvidia")}}}, b)

	t.Setenv(plugins.CUDASiteEnv, t.TempDir())
	_, err = chooseCUDABackend(context.Background(), fakeRepo(t), links, BackendOptions{})
	var ee *plugins.EnvError
	require.ErrorAs(t, err, &ee, "a site without the plugin is an error, not a silent fallback")
}
