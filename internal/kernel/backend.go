package kernel

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/internal/plugins"
)

// Environment variables that name plugin files explicitly; they win over any search.
const (
	// CUDAPluginEnv names a CUDA PJRT plugin file, e.g. the xla_cuda_plugin.so of pip's
	// jax-cuda13-pjrt package.
	CUDAPluginEnv = plugins.CUDAEnv
	// CPUPluginEnv names an XLA CPU PJRT plugin file ($CIFARLAB_XLA_CPU_PLUGIN, read by
	// backends.New, wins over it).
	CPUPluginEnv = plugins.KernelCPUEnv
	// pjrtPluginPathEnv is go-xla's list of folders to search for plugins (":"-separated).
	pjrtPluginPathEnv = plugins.PJRTPathEnv
)

// backend is the GoMLX backend configuration of one kernel.
type backend struct {
	// GoMLX is the value of GOMLX_BACKEND.
	GoMLX string
	// Env holds extra variables it needs (PJRT_PLUGIN_LIBRARY_PATH).
	Env map[string]string
	// Reason says how it was chosen, for install output and doctor.
	Reason string
	// Links are symbolic links Install must create (see jaxCUDABackend).
	Links []link
}

// link is a symbolic link at Path pointing to Target.
type link struct{ Path, Target string }

// backendForPlugin configures the xla backend for a plugin file: by name with its folder
// as go-xla's search path when go-xla recognises the file name (so name-based defaults,
// like shared buffers for "cpu", apply), else by absolute path.
func backendForPlugin(path, reason string) (backend, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return backend{}, err
	}
	if !fileExists(abs) {
		return backend{}, fmt.Errorf("PJRT plugin %s does not exist", abs)
	}
	if name := plugins.NameOf(abs); name != "" {
		return backend{GoMLX: "xla:" + name, Env: map[string]string{pjrtPluginPathEnv: filepath.Dir(abs)}, Reason: reason + ": " + abs}, nil
	}
	return backend{GoMLX: "xla:" + abs, Reason: reason + ": " + abs}, nil
}

// BackendOptions steer the backend choice; empty fields mean "detect".
type BackendOptions struct {
	// CPU and CUDA force the GOMLX_BACKEND value of each kernel (e.g. "go", "xla:cuda").
	CPU, CUDA string
	// CPUPlugin and CUDAPlugin name plugin files (default $CIFARLAB_CPU_PLUGIN,
	// $CIFARLAB_CUDA_PLUGIN).
	CPUPlugin, CUDAPlugin string
}

// kernelPlugin is what a kernel's backend is made from (backendOf), as findCPUPlugin and
// findCUDAPlugin found it: a GOMLX_BACKEND value set directly (forced, or a backend without a
// plugin file), else a plugin file; pip's jax CUDA plugin (jax) is linked where go-xla finds it,
// and the one of $CIFARLAB_CUDA_SITE (site) makes the kernel set that variable too.
type kernelPlugin struct {
	gomlx, path, reason string
	jax, site           bool
}

// backendOf is the backend of the kernel plugin p; linkDir is where pip's CUDA plugin is
// linked (jaxCUDABackend).
func backendOf(p kernelPlugin, linkDir string) (backend, error) {
	switch {
	case p.gomlx != "":
		return backend{GoMLX: p.gomlx, Reason: p.reason}, nil
	case !p.jax:
		return backendForPlugin(p.path, p.reason)
	}
	b, err := jaxCUDABackend(p.path, linkDir, p.reason)
	if err == nil && p.site {
		b.Env[plugins.CUDASiteEnv] = os.Getenv(plugins.CUDASiteEnv)
	}
	return b, err
}

// jaxCUDABackend configures the CUDA kernel for the plugin of pip's jax-cuda13-pjrt (or
// -cuda12-), SITE/jax_plugins/xla_cuda13/xla_cuda_plugin.so, whose NVIDIA libraries come
// from pip's nvidia-* packages in SITE/nvidia (the plugin's RPATH is
// $ORIGIN/../../nvidia/cu13/lib and friends).
//
// go-xla only finds plugins named pjrt_c_api_NAME_plugin.so, so the kernel gets a folder
// linkDir/jax_plugins/xla_cuda13 holding pjrt_c_api_cuda_plugin.so -> the jax file, next to
// linkDir/nvidia -> SITE/nvidia: $ORIGIN/../../nvidia resolves to the pip libraries whether
// the loader keeps the link's folder or the file's. The kernel then uses GOMLX_BACKEND=xla:cuda
// with PJRT_PLUGIN_LIBRARY_PATH on that folder (what backends.New("cuda") searches), and
// XLA_FLAGS=--xla_gpu_cuda_data_dir=SITE/nvidia/cu13 when pip's ptxas is there.
func jaxCUDABackend(plugin, linkDir, reason string) (backend, error) {
	abs, err := filepath.Abs(plugin)
	if err != nil {
		return backend{}, err
	}
	if !fileExists(abs) {
		return backend{}, fmt.Errorf("CUDA plugin %s does not exist", abs)
	}
	if linkDir == "" {
		return backend{}, fmt.Errorf("no folder for the links to the CUDA plugin %s", abs)
	}
	pluginDir := filepath.Dir(abs)                // SITE/jax_plugins/xla_cuda13
	site := filepath.Dir(filepath.Dir(pluginDir)) // SITE
	linkPluginDir := filepath.Join(linkDir, "jax_plugins", filepath.Base(pluginDir))
	b := backend{
		GoMLX:  "xla:cuda",
		Env:    map[string]string{pjrtPluginPathEnv: linkPluginDir},
		Reason: reason + ": " + abs,
		Links:  []link{{Path: filepath.Join(linkPluginDir, "pjrt_c_api_cuda_plugin.so"), Target: abs}},
	}
	if nv := filepath.Join(site, "nvidia"); dirExists(nv) {
		b.Links = append(b.Links, link{Path: filepath.Join(linkDir, "nvidia"), Target: nv})
		if data := plugins.JaxCUDADataDir(abs); data != "" {
			b.Env["XLA_FLAGS"] = "--xla_gpu_cuda_data_dir=" + data
		}
	} else {
		b.Reason += " (warning: no " + nv + ": on a GPU machine bash kernel/setup.sh installs the NVIDIA libraries, kernel/requirements-cuda-libs.txt)"
	}
	return b, nil
}
