package backends

import (
	"fmt"
	"strings"
)

// RuntimeErrorClass is one class of accelerator failure that TranslateRuntimeError recognises:
// the texts XLA prints for it and what cifarlib advises.
type RuntimeErrorClass struct {
	// Name names the class, e.g. "cuDNN missing or mismatched".
	Name string
	// Type is the Go type of the error TranslateRuntimeError returns, e.g. "*CuDNNError".
	Type string
	// Texts are the XLA texts that identify the class (matched case-insensitively).
	Texts []string
	// Advice is what the error tells the user to do.
	Advice string
}

// The seven classes, in the order TranslateRuntimeError tries them (device memory first: a
// CUBIN that fails to load with CUDA_ERROR_OUT_OF_MEMORY is a memory problem, not a driver's).
var runtimeErrorClasses = []RuntimeErrorClass{
	{Name: "device memory at run time", Type: "*DeviceMemoryError",
		Texts: []string{"Out of memory while trying to allocate", "Out of host memory while trying to allocate", "BufferAssignment OOM Debugging",
			"Failed to allocate request for", "CUDA_ERROR_OUT_OF_MEMORY", "RESOURCE_EXHAUSTED", "OOM when allocating"},
		Advice: deviceMemoryAdvice},
	{Name: "cuDNN missing or mismatched", Type: "*CuDNNError",
		Texts: []string{"Loaded runtime CuDNN library", "DNN library initialization failed", "CUDNN_STATUS_INTERNAL_ERROR",
			"CUDNN_STATUS_NOT_INITIALIZED", "Could not create cudnn handle"},
		Advice: "the CUDA PJRT plugin needs cuDNN 9 (pip's nvidia-cudnn-cu13 in SITE/nvidia/cudnn/lib): run `cifarlab doctor` " +
			"to see which cuDNN it finds; `bash kernel/setup.sh` on the GPU machine installs the pinned one " +
			"(kernel/requirements-cuda-libs.txt), or set CIFARLAB_CUDA_SITE to a site-packages that has it"},
	{Name: "cuBLAS", Type: "*CuBLASError",
		Texts: []string{"failed to create cublas handle", "Failed to initialize BLAS support", "CUBLAS_STATUS_NOT_INITIALIZED"},
		Advice: "the CUDA PJRT plugin needs cuBLAS 13 (pip's nvidia-cublas in SITE/nvidia/cu13/lib): run `cifarlab doctor` " +
			"to see which cuBLAS it finds and install the missing one with `bash kernel/setup.sh`; a cuBLAS that is present " +
			"but fails to start usually means the GPU memory is taken (nvidia-smi)"},
	{Name: "ptxas or libdevice missing", Type: "*CUDAToolsError",
		Texts: []string{"Couldn't find a suitable version of ptxas", "No PTX compilation provider is available",
			"Can't find libdevice directory", "libdevice not found", "Couldn't invoke ptxas"},
		Advice: "XLA compiles its GPU kernels with ptxas and libdevice (pip's nvidia-cuda-nvcc and nvidia-nvvm in " +
			"SITE/nvidia/cu13/bin and nvvm/libdevice, found through XLA_FLAGS=--xla_gpu_cuda_data_dir=SITE/nvidia/cu13): " +
			"run `cifarlab doctor` to see what is missing, then `bash kernel/setup.sh` and `cifarlab kernel install`"},
	{Name: "driver too old", Type: "*DriverError",
		Texts: []string{"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "Failed to load in-memory CUBIN", "does not match DSO version",
			"CUDA driver version is insufficient", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
		Advice: "the CUDA 13 PJRT plugin needs NVIDIA driver 580 or newer: check the driver with `nvidia-smi` " +
			"(the version at the top right) and update it; after a driver update reboot or reload the kernel module " +
			"so that the kernel's and the library's versions agree"},
	{Name: "kernel launch failure or illegal address", Type: "*KernelLaunchError",
		Texts: []string{"Failed to launch CUDA kernel", "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED",
			"an illegal memory access was encountered"},
		Advice: "the CUDA context is lost: restart the notebook kernel (or the program) before running anything else on " +
			"the GPU; then run the same cell on the CPU kernel (\"Go (cifarlab, CPU)\", the cpu backend), where cifarlib's " +
			"guards give their own message for a bad label or shape: try the CPU first"},
	{Name: "device mismatch", Type: "*DeviceMismatchError",
		Texts: []string{"Buffer passed to Execute() as argument"},
		Advice: "an input lives on another device than the program runs on: create every tensor and the model on the " +
			"same backend, and with several GPUs pass the inputs through cifarlib's distributed dataset " +
			"(training.Settings.Compute.Devices) rather than placing them by hand"},
}

const deviceMemoryAdvice = "use a smaller batch size (or model); go-xla's CUDA options in GOMLX_BACKEND: " +
	"\"cuda,preallocate=false\" (the default) allocates as needed, \"cuda,preallocate=true,memory_fraction=0.9\" " +
	"reserves 90% of the GPU up front; check that no other process holds GPU memory (nvidia-smi)"

// RuntimeErrorClasses lists the classes of accelerator failures TranslateRuntimeError turns into
// typed errors, with the XLA texts that identify each and the advice its error gives.
func RuntimeErrorClasses() []RuntimeErrorClass {
	out := make([]RuntimeErrorClass, len(runtimeErrorClasses))
	for i, c := range runtimeErrorClasses {
		c.Texts = append([]string(nil), c.Texts...)
		out[i] = c
	}
	return out
}

// RuntimeErrorTable is RuntimeErrorClasses as a Markdown table (class, XLA texts, error type,
// advice): what kernel/README.md and notebook 02 show.
func RuntimeErrorTable() string {
	var b strings.Builder
	b.WriteString("| class | text XLA prints | cifarlib error | what cifarlab says |\n|---|---|---|---|\n")
	for _, c := range runtimeErrorClasses {
		texts := make([]string, len(c.Texts))
		for i, t := range c.Texts {
			texts[i] = "`" + t + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | `%s` | %s |\n", c.Name, strings.Join(texts, ", "), c.Type, c.Advice)
	}
	return b.String()
}

// classOf returns the index in runtimeErrorClasses of the first class whose text msg contains,
// or -1.
func classOf(msg string) int {
	lower := strings.ToLower(msg)
	for i, c := range runtimeErrorClasses {
		for _, t := range c.Texts {
			if strings.Contains(lower, strings.ToLower(t)) {
				return i
			}
		}
	}
	return -1
}

// CUDAError is what the typed CUDA runtime errors have in common: the class and the raw text.
type CUDAError struct {
	// Class is the class's name (RuntimeErrorClass.Name).
	Class string
	// Advice is what to do (RuntimeErrorClass.Advice).
	Advice string
	// Err is the original error, e.g. go-xla's "PJRT error (code=N): <XLA's message>".
	Err error
}

func (e *CUDAError) Error() string {
	return fmt.Sprintf("CUDA failure, %s (%s): %s", e.Class, firstLine(e.Err.Error()), e.Advice)
}

// Unwrap returns the original error, with XLA's whole text.
func (e *CUDAError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCUDARuntime) true.
func (e *CUDAError) Is(target error) bool { return target == ErrCUDARuntime }

// CuDNNError: XLA found no usable cuDNN (missing, a version other than the plugin's, or one
// that failed to start).
type CuDNNError struct{ CUDAError }

// CuBLASError: XLA could not start cuBLAS.
type CuBLASError struct{ CUDAError }

// CUDAToolsError: XLA found no ptxas or no libdevice to compile GPU kernels with.
type CUDAToolsError struct{ CUDAError }

// DriverError: the NVIDIA driver is older than the CUDA of the plugin (or its kernel module and
// library disagree).
type DriverError struct{ CUDAError }

// KernelLaunchError: a GPU kernel failed to launch or touched an illegal address; the CUDA
// context is lost until the process restarts.
type KernelLaunchError struct{ CUDAError }

// DeviceMismatchError: a buffer given to a program lives on another device than the program.
type DeviceMismatchError struct{ CUDAError }

// newClassError builds the typed error of class i (not the device-memory class) around err.
func newClassError(i int, err error) error {
	c := runtimeErrorClasses[i]
	base := CUDAError{Class: c.Name, Advice: c.Advice, Err: err}
	switch c.Type {
	case "*CuDNNError":
		return &CuDNNError{base}
	case "*CuBLASError":
		return &CuBLASError{base}
	case "*CUDAToolsError":
		return &CUDAToolsError{base}
	case "*DriverError":
		return &DriverError{base}
	case "*KernelLaunchError":
		return &KernelLaunchError{base}
	case "*DeviceMismatchError":
		return &DeviceMismatchError{base}
	}
	panic("backends: runtime error class without a type: " + c.Type)
}
