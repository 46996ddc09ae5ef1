package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/stretchr/testify/require"
)

// `cifarlab train --backend cuda` on a machine without a GPU, with the real CUDA plugin of
// PyPI's jax-cuda13-pjrt (kernel/setup.sh puts it in .venv): the built binary exits 1
// with cifarlib's no-GPU message, and nothing of go-xla's or the plugin's own output.
func TestTrainCommandCUDAWithoutGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the cifarlab binary")
	}
	if plugins.HasNvidiaGPU() {
		t.Skip("this machine has an NVIDIA GPU")
	}
	sites, _ := filepath.Glob(filepath.Join("..", "..", ".venv", "lib", "python3*", "site-packages"))
	found := plugins.FindJaxCUDA(sites)
	if len(found) == 0 {
		if os.Getenv("CI") == "true" && os.Getenv("SKIP_CUDA_PLUGIN") != "1" {
			t.Fatal("CI: PyPI's jax-cuda13-pjrt is missing from .venv (kernel/run-tests.sh installs it: CIFARLAB_CUDA=plugin bash kernel/setup.sh)")
		}
		t.Skip("PyPI's jax-cuda13-pjrt is not installed in .venv (CIFARLAB_CUDA=plugin bash kernel/setup.sh installs it)")
	}
	plugin, err := filepath.EvalSymlinks(found[0])
	require.NoError(t, err)
	plugin, err = filepath.Abs(plugin)
	require.NoError(t, err)

	root := trainTestData(t, data.CIFAR10())
	bin := filepath.Join(t.TempDir(), "cifarlab")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	cmd := exec.Command(bin, "train", "--data", root, "--model", "linear", "--steps", "2", "--backend", "cuda")
	cmd.Env = append(os.Environ(), "GOMLX_NO_AUTO_INSTALL=1", plugins.CUDAEnv+"="+plugin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	require.Equal(t, 1, exitErr.ExitCode())
	require.Empty(t, stdout.String())
	// The status lines of the phase that failed come first (their times vary), then the error alone.
	status := regexp.MustCompile(`^creating the backend… \d+\.\d s\ncreating the backend · stopped after \d+\.\d s\n`)
	loc := status.FindStringIndex(stderr.String())
	require.NotNil(t, loc, "stderr must start with the backend's status lines: %q", stderr.String())
	require.Equal(t, "cifarlab train: "+`backend "cuda" unavailable: no NVIDIA GPU on this machine (`+plugins.DescribeGPUProbe()+
		`); the CUDA PJRT plugin is installed (jax-cuda13-pjrt 0.11.2) but needs a GPU: check for the GPU `+
		"and its driver with `nvidia-smi -L`; without a GPU use the CPU: the \"Go (cifarlab, CPU)\" kernel, or the cpu backend "+
		`(backends.New("cpu"))`+"\n", stderr.String()[loc[1]:], "the rest of stderr: no go-xla text")
	require.False(t, strings.Contains(stderr.String(), "invalid state"))
}
