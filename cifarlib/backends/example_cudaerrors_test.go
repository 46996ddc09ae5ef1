package backends_test

import (
	"errors"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
)

// A CUDA failure as go-xla reports it becomes a typed error that says what to do and keeps
// XLA's text; Train, Evaluate, Logits and New return their failures translated so.
func ExampleTranslateRuntimeError() {
	raw := errors.New("PJRT error (code=14): UNAVAILABLE: No PTX compilation provider is available. " +
		"Neither ptxas/nvlink nor nvjtlink is available.")
	err := backends.TranslateRuntimeError(raw)
	var tools *backends.CUDAToolsError
	fmt.Println(errors.As(err, &tools), errors.Is(err, backends.ErrCUDARuntime), errors.Unwrap(err) == raw)
	fmt.Println(tools.Class)

	for _, c := range backends.RuntimeErrorClasses() {
		fmt.Printf("%s: %s\n", c.Type, c.Name)
	}
	// Output:
	// true true true
	// ptxas or libdevice missing
	// *DeviceMemoryError: device memory at run time
	// *CuDNNError: cuDNN missing or mismatched
	// *CuBLASError: cuBLAS
	// *CUDAToolsError: ptxas or libdevice missing
	// *DriverError: driver too old
	// *KernelLaunchError: kernel launch failure or illegal address
	// *DeviceMismatchError: device mismatch
}
