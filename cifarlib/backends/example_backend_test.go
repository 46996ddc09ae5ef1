package backends_test

import (
	"errors"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
)

// Asking for CUDA on a machine without an NVIDIA GPU gives a *cifarlib.NoGPUError at once,
// before any plugin is loaded: it names what is missing, how to check it (nvidia-smi -L) and
// the CPU fallback, which the caller may take explicitly (NewBackend never falls back by itself).
func ExampleNewBackend_cudaOrCPU() {
	backend, err := backends.NewBackend(backends.BackendCUDA)
	if errors.Is(err, backends.ErrNoGPU) {
		var noGPU *backends.NoGPUError
		errors.As(err, &noGPU)
		fmt.Println("no GPU:", noGPU.Checked)
		backend, err = backends.NewBackend(backends.BackendCPU)
	}
	if err != nil {
		panic(err)
	}
	defer backend.Finalize()
	fmt.Println("backend:", backends.BackendName(backend))
}
