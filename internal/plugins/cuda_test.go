package plugins

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFindJaxCUDA(t *testing.T) {
	site := t.TempDir()
	cu13 := touch(t, filepath.Join(site, "jax_plugins/xla_cuda13/xla_cuda_plugin.so"))
	cu12 := touch(t, filepath.Join(site, "jax_plugins/xla_cuda12/xla_cuda_plugin.so"))
	touch(t, filepath.Join(site, "jax_plugins/xla_cuda13/__init__.py"))
	require.Equal(t, []string{cu13, cu12}, FindJaxCUDA([]string{site, t.TempDir()}))
}

func TestFindCUDAEnv(t *testing.T) {
	plugin := touch(t, filepath.Join(t.TempDir(), "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so"))
	t.Setenv(CUDAEnv, plugin)
	got, err := FindCUDA()
	require.NoError(t, err)
	require.Equal(t, plugin, got)

	missing := filepath.Join(t.TempDir(), "xla_cuda_plugin.so")
	t.Setenv(CUDAEnv, missing)
	_, err = FindCUDA()
	var ee *EnvError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, "the CUDA PJRT plugin named by $CIFARLAB_CUDA_PLUGIN="+missing+" does not exist (file does not exist): "+
		"set $CIFARLAB_CUDA_PLUGIN to the absolute path of the plugin (e.g. SITE/jax_plugins/xla_cuda13/"+
		"xla_cuda_plugin.so of pip's jax-cuda13-pjrt), or unset it", err.Error())
}

// TestJaxCUDADataDir: XLA is pointed at pip's CUDA tools next to jax-cuda13-pjrt's plugin.
func TestJaxCUDADataDir(t *testing.T) {
	site := t.TempDir()
	plugin := filepath.Join(site, "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so")
	require.Equal(t, "", JaxCUDADataDir(plugin), "no nvidia/cu13 tools")
	touch(t, filepath.Join(site, "nvidia", "cu13", "bin", "ptxas"))
	require.Equal(t, filepath.Join(site, "nvidia", "cu13"), JaxCUDADataDir(plugin))
	require.Equal(t, "", JaxCUDADataDir(filepath.Join(site, "lib", "pjrt_c_api_cuda_plugin.so")))

	t.Setenv("XLA_FLAGS", "--xla_dump_to=/tmp/d")
	SetJaxCUDADataDir(plugin)
	require.Equal(t, "--xla_dump_to=/tmp/d --xla_gpu_cuda_data_dir="+filepath.Join(site, "nvidia", "cu13"), os.Getenv("XLA_FLAGS"))
	t.Setenv("XLA_FLAGS", "--xla_gpu_cuda_data_dir=/opt/cuda")
	SetJaxCUDADataDir(plugin)
	require.Equal(t, "--xla_gpu_cuda_data_dir=/opt/cuda", os.Getenv("XLA_FLAGS"), "an explicit data dir is kept")
}

// TestGPUsAgreesWithHasNvidiaGPU: nvidia-smi's list and the device probe agree on this machine.
func TestGPUsAgreesWithHasNvidiaGPU(t *testing.T) {
	gpus, err := GPUs(context.Background())
	if _, lookErr := exec.LookPath("nvidia-smi"); lookErr != nil {
		require.Error(t, err, "no nvidia-smi")
		if devs, _ := filepath.Glob("/dev/nvidia[0-9]*"); len(devs) == 0 {
			require.False(t, HasNvidiaGPU(), "no device file and no nvidia-smi")
		}
		return
	}
	if err == nil && len(gpus) > 0 {
		require.True(t, HasNvidiaGPU(), "nvidia-smi lists %v", gpus)
	}
}
