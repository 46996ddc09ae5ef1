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
// records what pip is asked to install instead of downloading 1.9 GB, with nvidia-smi absent or
// a stand-in listing a GPU: the plugin and its NVIDIA libraries are installed only on a GPU
// machine or with CIFARLAB_CUDA=1 (CIFARLAB_CUDA=plugin: the plugin alone, as the test suite
// wants it), always hash-pinned, once; CIFARLAB_CUDA_SITE installs nothing.
func TestSetupCUDA(t *testing.T) {
	if devs, _ := filepath.Glob("/dev/nvidia[0-9]*"); len(devs) > 0 {
		t.Skip("this machine has NVIDIA device files")
	}
	script := filepath.Join(testRepo(t).Dir, "kernel", "setup-cuda.sh")
	venv := t.TempDir()
	site := filepath.Join(venv, "lib", "python3.11", "site-packages")
	calls := filepath.Join(t.TempDir(), "pip-calls")
	plugin := filepath.Join(site, "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so")
	// The stand-in python: one line per call; "installs" the files the script checks for.
	py := filepath.Join(venv, "bin", "python")
	require.NoError(t, os.MkdirAll(filepath.Dir(py), 0o755))
	require.NoError(t, os.WriteFile(py, []byte("#!/bin/sh\necho \"$*\" >> "+calls+"\n"+
		"case \"$*\" in *requirements-cuda-libs.txt*) mkdir -p "+site+"/nvidia/cudnn/lib && touch "+site+"/nvidia/cudnn/lib/libcudnn.so.9;;\n"+
		"  *requirements-cuda.txt*) mkdir -p "+filepath.Dir(plugin)+" && touch "+plugin+
		" && echo '_version = \"0.11.2\"' > "+filepath.Join(filepath.Dir(plugin), "version.py")+";; esac\n"), 0o755))
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

	pluginInstall := "-m pip install -q --disable-pip-version-check --no-deps --require-hashes -r " +
		filepath.Join(filepath.Dir(filepath.Dir(script)), "kernel", "requirements-cuda.txt")

	out, calls1, err := run(noGPU)
	require.NoError(t, err, out)
	require.Equal(t, "CUDA plugin: not installed (no NVIDIA GPU: no /dev/nvidia[0-9]*, nvidia-smi -L lists none; "+
		"CIFARLAB_CUDA=1 installs it and its NVIDIA libraries anyway, 1.9 GB)\n", out)
	require.Empty(t, calls1, "no download without a GPU")
	require.NoFileExists(t, plugin)

	out, calls1, err = run(noGPU, "CIFARLAB_CUDA=plugin")
	require.NoError(t, err, out)
	require.Equal(t, pluginInstall, calls1)
	require.Equal(t, "CUDA plugin jax-cuda13-pjrt 0.11.2 installed (CIFARLAB_CUDA=plugin)\n"+
		"NVIDIA libraries: not installed (no NVIDIA GPU; CIFARLAB_CUDA=1 installs them anyway, 1.8 GB)\n", out)

	out, calls1, err = run(withGPU, "CIFARLAB_CUDA=0")
	require.NoError(t, err, out)
	require.Empty(t, calls1)
	require.Equal(t, "CUDA plugin: not installed (CIFARLAB_CUDA=0)\n", out)

	out, calls2, err := run(withGPU)
	require.NoError(t, err, out)
	require.Equal(t, libsInstall, calls2)
	require.Contains(t, out, "CUDA plugin jax-cuda13-pjrt 0.11.2 already installed (GPU found: GPU 0: NVIDIA H200 (UUID: GPU-1))")
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
	require.Contains(t, out, "setup: CIFARLAB_CUDA=yes: use 1 (the plugin and its NVIDIA libraries), plugin (the plugin; its libraries on a GPU machine) or 0 (neither)")
}
