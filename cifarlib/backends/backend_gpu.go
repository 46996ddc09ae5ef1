package backends

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cifarlab/cifarlab/internal/plugins"
)

// NoGPUError is returned by New for "cuda" (also "xla:cuda", or "auto" with
// $GOMLX_BACKEND naming CUDA, as in the CUDA kernel) when this machine has no NVIDIA GPU, or the
// CUDA plugin sees none. It says what was checked, which CUDA plugin is installed, how to check
// the GPU and that the CPU is the fallback. New looks for the GPU before it loads the
// plugin, so nothing of XLA's own output reaches the user. errors.Is(err, ErrNoGPU) and
// errors.Is(err, ErrBackend) are true.
type NoGPUError struct {
	// Requested is the name given to New.
	Requested string
	// Checked says what was looked at and found, e.g. "no /dev/nvidia[0-9]* device;
	// nvidia-smi is not on PATH".
	Checked string
	// Plugin names the installed CUDA PJRT plugin: its pip package and version, e.g.
	// "jax-cuda13-pjrt 0.11.2", else its file's name; "" when there is none. The message says
	// this name, not a path of this machine, as a notebook's committed outputs show it.
	Plugin string
	// PluginPath is the plugin's file, absolute ("" when there is none): `cifarlab doctor` says it.
	PluginPath string
	// Err is the plugin's own error when it found no GPU while starting, else nil.
	Err error
}

func (e *NoGPUError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "backend %q unavailable: no NVIDIA GPU on this machine (%s)", e.Requested, e.Checked)
	if e.Err != nil {
		fmt.Fprintf(&b, " (the plugin says: %s)", firstLine(e.Err.Error()))
	}
	if e.Plugin != "" {
		fmt.Fprintf(&b, "; the CUDA PJRT plugin is installed (%s) but needs a GPU", e.Plugin)
	} else {
		b.WriteString("; no CUDA PJRT plugin is installed either")
	}
	b.WriteString(": check for the GPU and its driver with `nvidia-smi -L`; without a GPU use the CPU: " +
		"the \"Go (cifarlab, CPU)\" kernel, or the cpu backend (backends.New(\"cpu\"))")
	return b.String()
}

// Unwrap returns the plugin's error, if any.
func (e *NoGPUError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNoGPU) and errors.Is(err, ErrBackend) true.
func (e *NoGPUError) Is(target error) bool { return target == ErrNoGPU || target == ErrBackend }

// newNoGPUError describes the missing GPU and the installed CUDA plugin, without loading it.
func newNoGPUError(requested string, err error) *NoGPUError {
	e := &NoGPUError{Requested: requested, Checked: plugins.DescribeGPUProbe(), Err: err}
	if f, ferr := plugins.FindCUDAFile(""); ferr == nil && f.Path != "" {
		e.Plugin, e.PluginPath = f.Package, f.Path
		if e.Plugin == "" {
			e.Plugin = filepath.Base(f.Path)
		}
	}
	return e
}

// isNoGPUMessage reports whether a plugin's error says that it sees no GPU.
func isNoGPUMessage(msg string) bool {
	msg = strings.ToLower(msg)
	for _, p := range []string{"no visible gpu devices", "cuda_error_no_device", "no cuda-capable device"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
