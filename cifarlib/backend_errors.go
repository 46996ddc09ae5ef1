package cifarlib

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/internal/plugins"
)

// DeviceMemoryError is an accelerator out-of-memory failure translated by TranslateRuntimeError,
// with advice on what to change.
type DeviceMemoryError struct {
	// Err is the original runtime error.
	Err error
}

func (e *DeviceMemoryError) Error() string {
	return fmt.Sprintf("out of device memory (%s): use a smaller batch size or model; XLA CUDA preallocates "+
		"memory only when asked: keep -backend \"cuda,preallocate=false\" (the default) or cap it with "+
		"\"cuda,memory_fraction=0.5\"; check that no other process holds the GPU memory (nvidia-smi)",
		firstLine(e.Err.Error()))
}

// Unwrap returns the original error.
func (e *DeviceMemoryError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrDeviceMemory) true.
func (e *DeviceMemoryError) Is(target error) bool { return target == ErrDeviceMemory }

// TranslateRuntimeError turns XLA/PJRT runtime failures into actionable errors: out-of-memory
// (RESOURCE_EXHAUSTED, CUDA_ERROR_OUT_OF_MEMORY, ...) becomes *DeviceMemoryError; a missing CUDA
// device or driver (CUDA_ERROR_NO_DEVICE, no CUDA-capable device, driver version mismatch)
// becomes *BackendError with install advice. Other errors, and errors already typed by cifarlib,
// are returned unchanged; nil stays nil.
func TranslateRuntimeError(err error) error {
	if err == nil {
		return nil
	}
	var dm *DeviceMemoryError
	var be *BackendError
	if errors.As(err, &dm) || errors.As(err, &be) {
		return err
	}
	msg := strings.ToLower(err.Error())
	for _, p := range []string{"resource_exhausted", "out of memory", "cuda_error_out_of_memory", "oom when allocating",
		"failed to allocate"} {
		if strings.Contains(msg, p) {
			return &DeviceMemoryError{Err: err}
		}
	}
	for _, p := range []string{"cuda_error_no_device", "no cuda-capable device", "cuda driver version is insufficient",
		"cuinit", "failed call to cuinit", "unable to load cuda"} {
		if strings.Contains(msg, p) {
			return &BackendError{Requested: "cuda", Missing: "the CUDA device or driver is not usable", Err: err,
				Fix: "check the NVIDIA driver with nvidia-smi; " + plugins.CUDAInstallHint}
		}
	}
	return err
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
