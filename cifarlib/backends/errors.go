package backends

import "errors"

// Sentinel errors of the backends stage, matched with errors.Is by their typed errors.
var (
	// ErrBackend: a compute backend could not be created (*BackendError, *NoGPUError).
	ErrBackend = errors.New("backends: backend unavailable")
	// ErrDeviceMemory: the accelerator ran out of memory (*DeviceMemoryError).
	ErrDeviceMemory = errors.New("backends: out of device memory")
	// ErrNoGPU is matched by the *NoGPUError New returns for CUDA on a machine without a usable
	// NVIDIA GPU.
	ErrNoGPU = errors.New("backends: no NVIDIA GPU")
	// ErrCUDARuntime is matched by every typed CUDA runtime error TranslateRuntimeError returns
	// (*CuDNNError, *CuBLASError, *CUDAToolsError, *DriverError, *KernelLaunchError,
	// *DeviceMismatchError); a device-memory failure is ErrDeviceMemory instead.
	ErrCUDARuntime = errors.New("backends: CUDA runtime failure")
	// ErrDevices is matched for every device-count error: *DevicesUnsupportedError,
	// *DeviceCountError, *DevicesValueError and *BatchDivisibilityError.
	ErrDevices = errors.New("backends: device count")
)
