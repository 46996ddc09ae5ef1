package plugins

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// CUDASiteEnv names a Python site-packages folder that already holds pip's jax-cuda13-pjrt and
// its nvidia-* wheels (a GPU machine's JAX environment): the one setting that points the lab at
// it. kernel/setup.sh then installs neither, `cifarlab kernel install` configures the CUDA kernel
// on its plugin, doctor checks its libraries, and backends.New("cuda") loads its plugin
// ($CIFARLAB_CUDA_PLUGIN, naming a plugin file, still wins).
const CUDASiteEnv = "CIFARLAB_CUDA_SITE"

// CUDASitePlugin returns the CUDA plugin in $CIFARLAB_CUDA_SITE
// (SITE/jax_plugins/xla_cuda13/xla_cuda_plugin.so, newest CUDA first), "" when the variable is
// unset, and an *EnvError when it names no folder or a folder without the plugin.
func CUDASitePlugin() (string, error) {
	site := strings.TrimSpace(os.Getenv(CUDASiteEnv))
	if site == "" {
		return "", nil
	}
	fix := "set $" + CUDASiteEnv + " to the site-packages folder of a Python that has jax-cuda13-pjrt " +
		"(python3 -c 'import site; print(site.getsitepackages())'), or unset it"
	abs, err := filepath.Abs(site)
	if err == nil && !isDir(abs) {
		err = os.ErrNotExist
	}
	if err != nil {
		return "", &EnvError{Var: CUDASiteEnv, Value: site, Plugin: "site-packages folder", Fix: fix, Err: err}
	}
	found := FindJaxCUDA([]string{abs})
	if len(found) == 0 {
		return "", &EnvError{Var: CUDASiteEnv, Value: site, Plugin: "CUDA PJRT plugin (" + JaxCUDAFile + ") in the folder",
			Fix: fix, Err: errors.New("no " + JaxCUDAFile)}
	}
	return found[0], nil
}
