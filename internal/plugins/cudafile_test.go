package plugins

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/internal/repo"
	"github.com/stretchr/testify/require"
)

// fakeJaxCUDA lays out SITE/jax_plugins/xla_cuda13/{xla_cuda_plugin.so,version.py} as pip does.
func fakeJaxCUDA(t *testing.T, site, version string) string {
	t.Helper()
	plugin := touch(t, filepath.Join(site, "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so"))
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(plugin), "version.py"),
		[]byte("import os\n\n_version = \""+version+"\"\n_release_version: str | None = None\n"), 0o644))
	return plugin
}

func TestJaxCUDAPackage(t *testing.T) {
	site := t.TempDir()
	plugin := fakeJaxCUDA(t, site, "0.11.2")
	require.Equal(t, "jax-cuda13-pjrt 0.11.2", JaxCUDAPackage(plugin))
	link := filepath.Join(t.TempDir(), "jax_plugins", "xla_cuda13", "pjrt_c_api_cuda_plugin.so")
	require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
	require.NoError(t, os.Symlink(plugin, link))
	require.Equal(t, "jax-cuda13-pjrt 0.11.2", JaxCUDAPackage(link), "the kernel's link")
	require.NoError(t, os.Remove(filepath.Join(filepath.Dir(plugin), "version.py")))
	require.Equal(t, "jax-cuda13-pjrt", JaxCUDAPackage(plugin), "no version.py: the package only")
	require.Equal(t, "", JaxCUDAPackage(touch(t, filepath.Join(t.TempDir(), "go-xla", "pjrt_c_api_cuda_plugin.so"))))

	require.True(t, IsJaxCUDALayout(link))
	require.True(t, IsJaxCUDALayout(plugin))
	require.False(t, IsJaxCUDALayout("/usr/local/lib/go-xla/pjrt_c_api_cuda_plugin.so"))
	require.False(t, IsJaxCUDALayout("/x/xla_cuda13/xla_cuda_plugin.so"))
}

// TestFindCUDAFile checks the search order: the variable, go-xla's folders (the CUDA kernel's
// link), the checkout's venv, $VIRTUAL_ENV.
func TestFindCUDAFile(t *testing.T) {
	checkout := fakeCheckout(t)
	inRepo := fakeJaxCUDA(t, filepath.Join(checkout, ".venv", "lib", "python3.11", "site-packages"), "0.11.2")
	activeVenv := t.TempDir()
	active := fakeJaxCUDA(t, filepath.Join(activeVenv, "lib", "python3.12", "site-packages"), "0.10.0")
	t.Setenv(CUDAEnv, "")
	t.Setenv(PJRTPathEnv, t.TempDir())
	t.Setenv("VIRTUAL_ENV", activeVenv)
	t.Setenv(repo.Env, checkout)

	f, err := FindCUDAFile("")
	require.NoError(t, err)
	require.Equal(t, CUDAFile{Path: inRepo, Package: "jax-cuda13-pjrt 0.11.2", Source: "the venv " + filepath.Join(checkout, ".venv")}, f)
	require.Equal(t, "jax-cuda13-pjrt 0.11.2 at "+inRepo, f.String())

	f, err = FindCUDAFile(t.TempDir()) // a folder without .venv
	require.NoError(t, err)
	require.Equal(t, CUDAFile{Path: active, Package: "jax-cuda13-pjrt 0.10.0", Source: "the active venv $VIRTUAL_ENV=" + activeVenv}, f)

	links := filepath.Join(t.TempDir(), "jax_plugins", "xla_cuda13")
	require.NoError(t, os.MkdirAll(links, 0o755))
	require.NoError(t, os.Symlink(active, filepath.Join(links, "pjrt_c_api_cuda_plugin.so")))
	t.Setenv(PJRTPathEnv, links)
	f, err = FindCUDAFile("")
	require.NoError(t, err)
	require.Equal(t, CUDAFile{Path: active, Package: "jax-cuda13-pjrt 0.10.0", Source: "go-xla's plugin folders"}, f)

	goxla := touch(t, filepath.Join(t.TempDir(), "pjrt_c_api_cuda_plugin.so"))
	t.Setenv(CUDAEnv, goxla)
	f, err = FindCUDAFile("")
	require.NoError(t, err)
	require.Equal(t, CUDAFile{Path: goxla, Source: "$" + CUDAEnv}, f)
	require.Equal(t, goxla, f.String())

	t.Setenv(CUDAEnv, goxla+".gone")
	_, err = FindCUDAFile("")
	var ee *EnvError
	require.ErrorAs(t, err, &ee)

	t.Setenv(CUDAEnv, "")
	t.Setenv(PJRTPathEnv, t.TempDir())
	t.Setenv("VIRTUAL_ENV", "")
	f, err = FindCUDAFile(t.TempDir())
	require.NoError(t, err)
	require.Equal(t, CUDAFile{}, f)
}

func TestPrepareJaxCUDA(t *testing.T) {
	site := t.TempDir()
	plugin := fakeJaxCUDA(t, site, "0.11.2")
	touch(t, filepath.Join(site, "nvidia", "cu13", "bin", "ptxas"))
	t.Setenv("XLA_FLAGS", "")
	os.Unsetenv(GoXLACUDAChecksEnv)
	t.Cleanup(func() { os.Unsetenv(GoXLACUDAChecksEnv) })

	PrepareJaxCUDA("/usr/local/lib/go-xla/pjrt_c_api_cuda_plugin.so")
	_, set := os.LookupEnv(GoXLACUDAChecksEnv)
	require.False(t, set, "go-xla's own layout keeps its checks")
	require.Equal(t, "", os.Getenv("XLA_FLAGS"))

	PrepareJaxCUDA(plugin)
	require.Equal(t, "0", os.Getenv(GoXLACUDAChecksEnv))
	require.Equal(t, "--xla_gpu_cuda_data_dir="+filepath.Join(site, "nvidia", "cu13"), os.Getenv("XLA_FLAGS"))

	t.Setenv(GoXLACUDAChecksEnv, "1")
	PrepareJaxCUDA(plugin)
	require.Equal(t, "1", os.Getenv(GoXLACUDAChecksEnv), "an explicit setting is kept")
}

// TestDescribeGPUProbe runs the probe with nvidia-smi absent, failing and listing a GPU (a
// stand-in script on PATH: there is no NVIDIA driver here).
func TestDescribeGPUProbe(t *testing.T) {
	if devs, _ := filepath.Glob("/dev/nvidia[0-9]*"); len(devs) > 0 {
		t.Skip("this machine has NVIDIA device files")
	}
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	require.Equal(t, "no /dev/nvidia[0-9]* device; nvidia-smi is not on PATH", DescribeGPUProbe())

	smi := filepath.Join(bin, "nvidia-smi")
	require.NoError(t, os.WriteFile(smi, []byte("#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'\nexit 9\n"), 0o755))
	require.Equal(t, "no /dev/nvidia[0-9]* device; nvidia-smi -L failed: NVIDIA-SMI has failed because it could not "+
		"communicate with the NVIDIA driver.", DescribeGPUProbe())
	require.NoError(t, os.WriteFile(smi, []byte("#!/bin/sh\necho 'No devices found.'\n"), 0o755))
	require.Equal(t, "no /dev/nvidia[0-9]* device; nvidia-smi -L lists no GPU", DescribeGPUProbe())
	require.NoError(t, os.WriteFile(smi, []byte("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-1)'\n"), 0o755))
	require.Equal(t, "no /dev/nvidia[0-9]* device; nvidia-smi -L: GPU 0: NVIDIA H200 (UUID: GPU-1)", DescribeGPUProbe())
}
