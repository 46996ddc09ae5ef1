package kernel

import (
	"github.com/cifarlab/cifarlab/internal/plugins"
)

// checkCUDALibs gives one line per NVIDIA library and tool the CUDA plugin loads
// (plugins.CUDALibs): where it was found, with the version of its pip package, or why not with the
// fix. Without a GPU a missing library is only absent (the lab runs on the CPU); with one it
// fails, since the CUDA kernel would fail at its first convolution or matrix product.
func checkCUDALibs(plugin string, hasGPU bool) []Check {
	var checks []Check
	for _, s := range plugins.CheckCUDALibs(plugin) {
		kind := "CUDA lib "
		if s.Lib.Tool {
			kind = "CUDA tool "
		}
		c := Check{Name: kind + s.Lib.Name, Detail: s.String()}
		switch {
		case s.OK():
			c.Status = StatusOK
		case hasGPU:
			c.Status, c.Fix = StatusFail, plugins.CUDALibsFix
		default:
			c.Status, c.Fix = StatusAbsent, "optional without a GPU; "+plugins.CUDALibsFix
		}
		checks = append(checks, c)
	}
	return checks
}

// cudaPluginToCheck picks the plugin whose libraries doctor checks: $CIFARLAB_CUDA_SITE's, else
// the first one found.
func cudaPluginToCheck(found []string) string {
	if p, err := plugins.CUDASitePlugin(); err == nil && p != "" {
		return p
	}
	if len(found) > 0 {
		return found[0]
	}
	return ""
}
