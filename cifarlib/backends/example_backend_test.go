package backends_test

import (
	"errors"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
)

// Asking for CUDA on a machine without an NVIDIA GPU gives a *NoGPUError at once,
// before any plugin is loaded: it names what is missing, how to check it (nvidia-smi -L) and
// the CPU fallback, which the caller may take explicitly (New never falls back by itself).
func ExampleNew_cudaOrCPU() {
	backend, err := backends.New(backends.CUDA)
	if errors.Is(err, backends.ErrNoGPU) {
		var noGPU *backends.NoGPUError
		errors.As(err, &noGPU)
		fmt.Println("no GPU:", noGPU.Checked)
		backend, err = backends.New(backends.CPU)
	}
	if err != nil {
		panic(err)
	}
	defer backend.Finalize()
	fmt.Println("backend:", backends.Name(backend))
}

// Asking for a backend that cannot work here (e.g. "cuda" without a GPU or without the CUDA
// plugin) fails fast with a *BackendError saying what is missing and how to fix it.
func ExampleNew() {
	b, err := backends.New("go")
	if err != nil {
		panic(err)
	}
	fmt.Println(backends.Name(b))
	_, err = backends.New("xla:no_such_plugin")
	fmt.Println(errors.Is(err, backends.ErrBackend))
	// Output:
	// go (pure Go, CPU)
	// true
}
