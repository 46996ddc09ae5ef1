package backends

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/internal/plugins"
)

// DeviceMemoryError is an accelerator out-of-memory failure translated by TranslateRuntimeError,
// with what XLA says the program needs and advice on what to change.
type DeviceMemoryError struct {
	// Err is the original runtime error.
	Err error
	// Needs is what XLA's text states about the program's memory (zero when it states nothing).
	Needs MemoryNeeds
	// BatchSize is the batch size of the run that failed, when known (Train, Evaluate, Logits).
	BatchSize int
	// DeviceBytes is the GPU's memory (nvidia-smi), when known.
	DeviceBytes int64
}

func (e *DeviceMemoryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "out of device memory (%s)", firstLine(e.Err.Error()))
	if d := e.Needs.describe(); d != "" {
		b.WriteString(": " + d)
	}
	if e.DeviceBytes > 0 {
		fmt.Fprintf(&b, "; the GPU has %s", formatBytes(e.DeviceBytes))
	}
	if fit := e.Needs.FitBatch(e.BatchSize, e.DeviceBytes); fit > 0 {
		fmt.Fprintf(&b, "; batch size %d would fit (this run used %d; an estimate: the temporaries grow with the batch)",
			fit, e.BatchSize)
	} else if e.BatchSize > 0 {
		fmt.Fprintf(&b, "; this run used batch size %d", e.BatchSize)
	}
	if e.Needs.Host {
		b.WriteString(": the host's pinned memory for GPU transfers ran out, not the GPU's: set " +
			"XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB above its default of 64, or " + deviceMemoryAdvice)
		return b.String()
	}
	b.WriteString(": " + deviceMemoryAdvice)
	return b.String()
}

// Unwrap returns the original error.
func (e *DeviceMemoryError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrDeviceMemory) true.
func (e *DeviceMemoryError) Is(target error) bool { return target == ErrDeviceMemory }

// TranslateRuntimeError turns XLA/PJRT runtime failures (go-xla's "PJRT error (code=N): ...")
// into typed errors that keep the raw text (errors.Unwrap) and say what to do, one per class of
// RuntimeErrorClasses: out of device memory (*DeviceMemoryError, with what XLA says the program
// needs), cuDNN (*CuDNNError), cuBLAS (*CuBLASError), ptxas or libdevice (*CUDAToolsError), the
// driver (*DriverError), a failed kernel launch or illegal address (*KernelLaunchError), a buffer
// on the wrong device (*DeviceMismatchError). A missing CUDA device (CUDA_ERROR_NO_DEVICE, no
// CUDA-capable device, a failing cuInit) becomes *BackendError with install advice. Other
// errors, and errors already typed by cifarlib, are returned unchanged; nil stays nil.
func TranslateRuntimeError(err error) error {
	if err == nil || alreadyTranslated(err) {
		return err
	}
	msg := err.Error()
	lower := strings.ToLower(msg)
	for _, p := range []string{"cuda_error_no_device", "no cuda-capable device"} {
		if strings.Contains(lower, p) {
			return noCUDADeviceError(err)
		}
	}
	switch i := classOf(msg); {
	case i == 0:
		return newDeviceMemoryError(err)
	case i > 0:
		return newClassError(i, err)
	}
	for _, p := range []string{"out of memory", "failed to allocate"} {
		if strings.Contains(lower, p) {
			return newDeviceMemoryError(err)
		}
	}
	for _, p := range []string{"failed call to cuinit", "cuinit", "unable to load cuda"} {
		if strings.Contains(lower, p) {
			return noCUDADeviceError(err)
		}
	}
	return err
}

// newDeviceMemoryError is the *DeviceMemoryError around err, with what its text says the
// program needs.
func newDeviceMemoryError(err error) *DeviceMemoryError {
	needs, _ := ParseMemoryNeeds(err.Error())
	return &DeviceMemoryError{Err: err, Needs: needs}
}

func noCUDADeviceError(err error) error {
	return &BackendError{Requested: "cuda", Missing: "the CUDA device or driver is not usable", Err: err,
		Fix: "check the NVIDIA driver with nvidia-smi; " + plugins.CUDAInstallHint}
}

// alreadyTranslated reports whether err holds an error TranslateRuntimeError returns.
func alreadyTranslated(err error) bool {
	var dm *DeviceMemoryError
	var be *BackendError
	return errors.As(err, &dm) || errors.As(err, &be) || errors.Is(err, ErrCUDARuntime)
}

// translateRunError is TranslateRuntimeError at the library boundary of a run with batch size
// batch (0: unknown): a device-memory error also gets the batch size and the GPU's memory, so
// that it can say which batch size would fit.
func TranslateRunError(err error, batch int) error {
	err = TranslateRuntimeError(err)
	var dm *DeviceMemoryError
	if errors.As(err, &dm) && dm.BatchSize == 0 && batch > 0 {
		dm.BatchSize = batch
		if dm.DeviceBytes == 0 {
			dm.DeviceBytes = gpuMemoryBytes()
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

// trainCatch runs fn, turning a panic (GoMLX graph code reports errors by panicking) into an
// error; an error panicked keeps its type for errors.As. PJRT failures (compilation, execution,
// transfers) come back translated by TranslateRuntimeError.
func TrainCatch(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if pe, ok := p.(error); ok {
				err = pe
			} else {
				err = fmt.Errorf("backends: %v", p)
			}
		}
		err = TranslateRuntimeError(err)
	}()
	return fn()
}
