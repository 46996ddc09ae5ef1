package kernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSetupCUDA runs kernel/setup-cuda.sh (setup.sh's CUDA step) against a venv whose python
// records what pip is asked to install instead of downloading 1.8 GB, with nvidia-smi absent or
// a stand-in listing a GPU: the NVIDIA libraries are installed only on a GPU machine or with
// CIFARLAB_CUDA=1, always hash-pinned, once; CIFARLAB_CUDA_SITE installs nothing.
func TestSetupCUDA(t *testing.T) {
	if devs, _ := filepath.Glob("/dev/nvidia[0-9]*"); len(devs) > 0 {
		t.Skip("this machine has NVIDIA device files")
	}
	script, err := filepath.Abs("setup-cuda.sh")
	require.NoError(t, err)
	venv := t.TempDir()
	site := filepath.Join(venv, "lib", "python3.11", "site-packages")
	calls := filepath.Join(t.TempDir(), "pip-calls")
	// The stand-in python: one line per call; "installs" the cuDNN file the script checks for.
	py := filepath.Join(venv, "bin", "python")
	require.NoError(t, os.MkdirAll(filepath.Dir(py), 0o755))
	require.NoError(t, os.WriteFile(py, []byte("#!/bin/sh\necho \"$*\" >> "+calls+"\n"+
		"case \"$*\" in *requirements-cuda-libs.txt*) mkdir -p "+site+"/nvidia/cudnn/lib && touch "+site+"/nvidia/cudnn/lib/libcudnn.so.9;; esac\n"), 0o755))
	// jax-cuda13-pjrt already in place, as setup's earlier runs leave it.
	plugin := filepath.Join(site, "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so")
	require.NoError(t, os.MkdirAll(filepath.Dir(plugin), 0o755))
	require.NoError(t, os.WriteFile(plugin, nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(plugin), "version.py"), []byte("_version = \"0.11.2\"\n"), 0o644))
	noGPU := t.TempDir()
	withGPU := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(withGPU, "nvidia-smi"), []byte("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-1)'\n"), 0o755))

	run := func(bin string, env ...string) (string, string, error) {
		_ = os.Remove(calls)
		cmd := exec.Command("bash", script)
		cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin", "VENV=" + venv}, env...)
		out, err := cmd.CombinedOutput()
		got, _ := os.ReadFile(calls)
		return string(out), strings.TrimSpace(string(got)), err
	}
	libsInstall := "-m pip install -q --disable-pip-version-check --no-deps --require-hashes -r " +
		filepath.Join(filepath.Dir(filepath.Dir(script)), "kernel", "requirements-cuda-libs.txt")

	out, calls1, err := run(noGPU)
	require.NoError(t, err, out)
	require.Equal(t, "CUDA plugin jax-cuda13-pjrt 0.11.2 already installed\nNVIDIA libraries: not installed (no NVIDIA GPU: "+
		"no /dev/nvidia[0-9]*, nvidia-smi -L lists none; CIFARLAB_CUDA=1 installs them anyway, 1.8 GB)\n", out)
	require.Empty(t, calls1, "no download without a GPU")

	out, _, err = run(withGPU, "CIFARLAB_CUDA=0")
	require.NoError(t, err, out)
	require.Contains(t, out, "NVIDIA libraries: skipped (CIFARLAB_CUDA=0)")

	out, calls2, err := run(withGPU)
	require.NoError(t, err, out)
	require.Equal(t, libsInstall, calls2)
	require.Contains(t, out, "NVIDIA libraries: installing kernel/requirements-cuda-libs.txt (GPU found: GPU 0: NVIDIA H200 (UUID: GPU-1); 1.8 GB)")
	require.Contains(t, out, "NVIDIA libraries installed into "+filepath.Join(site, "nvidia"))

	out, calls3, err := run(withGPU)
	require.NoError(t, err, out)
	require.Empty(t, calls3, "idempotent")
	require.Contains(t, out, "NVIDIA libraries already installed (GPU found: GPU 0: NVIDIA H200 (UUID: GPU-1))")

	require.NoError(t, os.Remove(filepath.Join(venv, ".cifarlab-cuda-libs.sha256")))
	out, calls4, err := run(noGPU, "CIFARLAB_CUDA=1")
	require.NoError(t, err, out)
	require.Equal(t, libsInstall, calls4, "an image built without a GPU")

	out, calls5, err := run(withGPU, "CIFARLAB_CUDA_SITE="+site)
	require.NoError(t, err, out)
	require.Empty(t, calls5, "an existing environment: nothing installed")
	require.Equal(t, "CUDA plugin: using CIFARLAB_CUDA_SITE's "+plugin+" (NVIDIA libraries: missing; cifarlab doctor checks each)\n", out)

	empty := t.TempDir()
	out, _, err = run(withGPU, "CIFARLAB_CUDA_SITE="+empty)
	require.Error(t, err)
	require.Contains(t, out, "setup: CIFARLAB_CUDA_SITE="+empty+" has no jax_plugins/xla_cuda13/xla_cuda_plugin.so")

	out, _, err = run(noGPU, "CIFARLAB_CUDA=yes")
	require.Error(t, err)
	require.Contains(t, out, "setup: CIFARLAB_CUDA=yes: use 1 (install the NVIDIA libraries) or 0 (never)")
}
