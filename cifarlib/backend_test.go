package cifarlib

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewBackendGo(t *testing.T) {
	b, err := NewBackend("go")
	require.NoError(t, err)
	require.Equal(t, "go (pure Go, CPU)", BackendName(b))
	require.Equal(t, "<no backend>", BackendName(nil))
}

func TestNewBackendCPU(t *testing.T) {
	b, err := NewBackend("cpu")
	require.NoError(t, err)
	if xlaPlugin("cpu") == "" {
		require.Equal(t, "go (pure Go, CPU)", BackendName(b), "without the XLA CPU plugin, cpu is the Go backend")
	} else {
		require.Equal(t, "xla:cpu (XLA CPU plugin)", BackendName(b))
	}
}

func TestNewBackendAuto(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	b, err := NewBackend("auto")
	require.NoError(t, err)
	require.Equal(t, "go (pure Go, CPU)", BackendName(b))

	t.Setenv("GOMLX_BACKEND", "")
	b, err = NewBackend("")
	require.NoError(t, err)
	if !HasNvidiaGPU() || xlaPlugin("cuda") == "" {
		want := "go (pure Go, CPU)"
		if xlaPlugin("cpu") != "" {
			want = "xla:cpu (XLA CPU plugin)"
		}
		require.Equal(t, want, BackendName(b))
	}

	t.Setenv("GOMLX_BACKEND", "tpu")
	_, err = NewBackend("auto")
	require.EqualError(t, err, `cifarlib: $GOMLX_BACKEND="tpu": backend "tpu" unavailable: unknown backend name: `+
		`use one of "auto", "cpu", "go", "cuda" (or a GoMLX configuration such as "xla:cpu")`)
}

// withGPU overrides the GPU probe for one test.
func withGPU(t *testing.T, present bool) {
	saved := HasNvidiaGPU
	HasNvidiaGPU = func() bool { return present }
	t.Cleanup(func() { HasNvidiaGPU = saved })
}

func TestNewBackendCUDAWithoutGPU(t *testing.T) {
	withGPU(t, false)
	_, err := NewBackend("cuda")
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.True(t, errors.Is(err, ErrBackend))
	require.Equal(t, `backend "cuda" unavailable: no NVIDIA GPU on this machine (no /dev/nvidia* device and `+
		`nvidia-smi finds none): run on a machine with an NVIDIA GPU and its driver, or use -backend cpu`, err.Error())
	_, err = NewBackend("xla:cuda")
	require.ErrorAs(t, err, &be)
	require.Equal(t, "xla:cuda", be.Requested)
}

func TestNewBackendCUDAWithoutPlugin(t *testing.T) {
	if xlaPlugin("cuda") != "" {
		t.Skip("the CUDA PJRT plugin is installed here")
	}
	withGPU(t, true)
	_, err := NewBackend("cuda")
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.Contains(t, be.Missing, "the CUDA PJRT plugin is not installed (plugins found: ")
	require.Equal(t, CUDAInstallHint, be.Fix)
	require.Contains(t, err.Error(), "go run github.com/gomlx/go-xla/cmd/pjrt_installer@latest -plugin=cuda13")
}

func TestNewBackendNeverDownloads(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	_, err := NewBackend("xla:cpu")
	if xlaPlugin("cpu") == "" {
		require.EqualError(t, err, `backend "xla:cpu" unavailable: the XLA PJRT plugin "cpu" is not installed `+
			`(found: none): install it with `+"`go run github.com/gomlx/go-xla/cmd/pjrt_installer@latest`"+
			`, set PJRT_PLUGIN_LIBRARY_PATH to its folder, or use -backend go`)
	}
	_, statErr := os.Stat(filepath.Join(home, ".local", "lib", "go-xla"))
	require.True(t, os.IsNotExist(statErr), "NewBackend must not install plugins")
}

func TestNewBackendUnknown(t *testing.T) {
	_, err := NewBackend("tpu")
	require.EqualError(t, err, `backend "tpu" unavailable: unknown backend name: use one of "auto", "cpu", "go", "cuda" `+
		`(or a GoMLX configuration such as "xla:cpu")`)
	_, err = NewBackend("go:bogus_option")
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.Equal(t, "the Go backend rejected its configuration", be.Missing)
}

func TestTranslateRuntimeError(t *testing.T) {
	require.NoError(t, TranslateRuntimeError(nil))
	oom := errors.New("failed to execute graph: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes.\nBufferAssignment OOM Debugging.")
	err := TranslateRuntimeError(oom)
	var dm *DeviceMemoryError
	require.ErrorAs(t, err, &dm)
	require.True(t, errors.Is(err, ErrDeviceMemory))
	require.Same(t, oom, errors.Unwrap(err))
	require.Equal(t, "out of device memory (failed to execute graph: RESOURCE_EXHAUSTED: Out of memory while trying "+
		"to allocate 17179869184 bytes.): use a smaller batch size or model; XLA CUDA preallocates memory only when "+
		"asked: keep -backend \"cuda,preallocate=false\" (the default) or cap it with \"cuda,memory_fraction=0.5\"; "+
		"check that no other process holds the GPU memory (nvidia-smi)", err.Error())

	noDev := errors.New("while creating plugin cuda: INTERNAL: CUDA error: Failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected")
	err = TranslateRuntimeError(noDev)
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.Equal(t, "the CUDA device or driver is not usable", be.Missing)

	other := errors.New("something else")
	require.Same(t, other, TranslateRuntimeError(other))
	require.Same(t, err, TranslateRuntimeError(err), "already translated errors are kept")
}
