package backends

import (
	"fmt"

	"github.com/gomlx/compute"
)

// xlaCPUName is Name of an XLA CPU backend.
const xlaCPUName = "xla:cpu (XLA CPU plugin)"

// IsGoBackend reports whether b is the pure-Go backend.
func IsGoBackend(b compute.Backend) bool { return b != nil && b.String() == Go }

// Name describes a backend for display, e.g. "go (pure Go, CPU)",
// "xla:cpu (XLA CPU plugin)" or "xla:cuda (XLA CUDA: NVIDIA H100 ...)".
func Name(b compute.Backend) string {
	if b == nil {
		return "<no backend>"
	}
	if IsGoBackend(b) {
		return "go (pure Go, CPU)"
	}
	if name, _, ok := lazyKind(b); ok { // not created yet: named without creating it
		return name
	}
	if xb, ok := xlaOf(b); ok {
		if xb.IsCUDA() {
			desc := ""
			func() {
				defer func() { _ = recover() }()
				if b.NumDevices() > 0 {
					desc = b.DeviceDescription(0)
				}
			}()
			if desc != "" {
				return fmt.Sprintf("xla:cuda (XLA CUDA: %s)", desc)
			}
			return "xla:cuda (XLA CUDA)"
		}
		if xb.IsCPU() {
			return xlaCPUName
		}
	}
	return fmt.Sprintf("%s (%s)", b.String(), b.Name())
}

// Plugin returns the PJRT plugin an XLA backend runs on (a name such as "cuda", or the
// absolute path of the plugin file), or "" for other backends.
func Plugin(b compute.Backend) string {
	if _, plugin, ok := lazyKind(b); ok {
		return plugin
	}
	if xb, ok := xlaOf(b); ok {
		return xb.PluginName()
	}
	return ""
}
