package cifarlib

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Environment variables that steer where cifarlib looks for PJRT plugins and the repository.
const (
	// XLACPUPluginEnv names XLA's CPU PJRT plugin file (pjrt_c_api_cpu_plugin.so) explicitly;
	// it wins over every search. A path that does not exist is an error, not a fallback.
	XLACPUPluginEnv = "CIFARLAB_XLA_CPU_PLUGIN"
	// KernelCPUPluginEnv is the name the cifarlab kernel installer uses for the same file; it is
	// read when XLACPUPluginEnv is unset.
	KernelCPUPluginEnv = "CIFARLAB_CPU_PLUGIN"
	// CUDAPluginEnv names a CUDA PJRT plugin file explicitly, e.g. the xla_cuda_plugin.so of
	// pip's jax-cuda13-pjrt package (the same variable the kernel installer reads).
	CUDAPluginEnv = "CIFARLAB_CUDA_PLUGIN"
	// RepoEnv names the cifarlab checkout whose .venv is searched for the XLA CPU plugin; by
	// default the repository is found from the working directory (or the executable) upwards.
	RepoEnv = "CIFARLAB_REPO"
)

// ModulePath is the Go module path of this repository; its go.mod marks the repository root.
const ModulePath = "github.com/cifarlab/cifarlab"

// XLACPUPluginVenvGlob is where pip installs XLA's CPU PJRT plugin (PyPI package
// lammps-jax-pjrt-cpu, see kernel/requirements-xla-cpu.txt) inside a virtual environment.
const XLACPUPluginVenvGlob = "lib/python3*/site-packages/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so"

// PluginLocation is a PJRT plugin file found by FindXLACPUPlugin.
type PluginLocation struct {
	// Path is the absolute path of the plugin's shared library; empty when none was found.
	Path string
	// Source says how it was found, e.g. "$CIFARLAB_XLA_CPU_PLUGIN", "go-xla's plugin folders"
	// or "the venv /work/main/.venv".
	Source string
	// Explicit is true when an environment variable named the file.
	Explicit bool
}

// FindXLACPUPlugin locates XLA's CPU PJRT plugin without loading it or downloading anything.
// The first match wins:
//
//  1. $CIFARLAB_XLA_CPU_PLUGIN (or the kernel's $CIFARLAB_CPU_PLUGIN): a file path;
//  2. go-xla's own plugin folders ($PJRT_PLUGIN_LIBRARY_PATH, or ~/.local/lib/go-xla,
//     /usr/local/lib/go-xla and the library paths), for a plugin named "cpu" or "cpu_vX";
//  3. the repository's venv: REPO/.venv/lib/python3*/site-packages/lammps_jax_pjrt_cpu/
//     pjrt_c_api_cpu_plugin.so, where REPO is $CIFARLAB_REPO or the first folder holding
//     this module's go.mod above the working directory (or above the running executable);
//  4. the active venv, $VIRTUAL_ENV, at the same relative path.
//
// When nothing is installed it returns a zero PluginLocation and a nil error. An environment
// variable naming a missing file gives a *BackendError.
func FindXLACPUPlugin() (PluginLocation, error) {
	return FindXLACPUPluginIn("")
}

// FindXLACPUPluginIn is FindXLACPUPlugin with step 3 looking in the venv of the checkout repoDir
// ("" finds the checkout as FindXLACPUPlugin does). "cifarlab kernel install --repo DIR" uses it.
func FindXLACPUPluginIn(repoDir string) (PluginLocation, error) {
	for _, env := range []string{XLACPUPluginEnv, KernelCPUPluginEnv} {
		p := strings.TrimSpace(os.Getenv(env))
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err == nil && !isFile(abs) {
			err = os.ErrNotExist
		}
		if err != nil {
			return PluginLocation{}, &BackendError{Requested: BackendCPU,
				Missing: "the XLA CPU plugin named by $" + env + "=" + p + " does not exist", Err: err,
				Fix: "set $" + env + " to the absolute path of pjrt_c_api_cpu_plugin.so (pip install " +
					"--no-deps lammps-jax-pjrt-cpu==0.11.2 puts it in site-packages/lammps_jax_pjrt_cpu), or unset it"}
		}
		return PluginLocation{Path: abs, Source: "$" + env, Explicit: true}, nil
	}
	if name := xlaPlugin("cpu"); name != "" {
		if p := xlaPlugins()[name]; p != "" && filepath.IsAbs(p) && isFile(p) {
			return PluginLocation{Path: p, Source: "go-xla's plugin folders"}, nil
		}
	}
	if repoDir == "" {
		repoDir = findRepoDir()
	}
	if repoDir != "" {
		venv := filepath.Join(repoDir, ".venv")
		if p := venvXLACPUPlugin(venv); p != "" {
			return PluginLocation{Path: p, Source: "the venv " + venv}, nil
		}
	}
	if venv := os.Getenv("VIRTUAL_ENV"); venv != "" && filepath.IsAbs(venv) {
		if p := venvXLACPUPlugin(venv); p != "" {
			return PluginLocation{Path: p, Source: "the active venv $VIRTUAL_ENV=" + venv}, nil
		}
	}
	return PluginLocation{}, nil
}

// venvXLACPUPlugin returns the plugin installed by pip in the venv folder, or "". With several
// Python versions the newest (last in lexical order of python3.N, by N) wins.
func venvXLACPUPlugin(venv string) string {
	matches, _ := filepath.Glob(filepath.Join(venv, XLACPUPluginVenvGlob))
	sort.Slice(matches, func(i, j int) bool { return pythonMinor(matches[i]) < pythonMinor(matches[j]) })
	for i := len(matches) - 1; i >= 0; i-- {
		if isFile(matches[i]) {
			if abs, err := filepath.Abs(matches[i]); err == nil {
				return abs
			}
		}
	}
	return ""
}

// pythonMinor returns N of the ".../python3.N/..." folder in path, or -1.
func pythonMinor(path string) int {
	for _, part := range strings.Split(filepath.ToSlash(path), "/") {
		if rest, ok := strings.CutPrefix(part, "python3."); ok {
			n := 0
			for _, c := range rest {
				if c < '0' || c > '9' {
					return -1
				}
				n = n*10 + int(c-'0')
			}
			return n
		}
	}
	return -1
}

// FindRepoDir returns the cifarlab checkout: $CIFARLAB_REPO when it holds this module's
// go.mod, else the first such folder at or above the working directory, else at or above the
// running executable's folder (the cifarlab binary lives in REPO/.bin). It returns "" when
// there is none, with the folders it searched (for error messages).
func FindRepoDir() (dir string, searched []string) {
	if env := os.Getenv(RepoEnv); env != "" {
		if abs, err := filepath.Abs(env); err == nil && IsRepoDir(abs) {
			return abs, []string{env}
		}
		return "", []string{env}
	}
	if wd, err := os.Getwd(); err == nil {
		searched = append(searched, wd)
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		searched = append(searched, filepath.Dir(exe))
	}
	for _, start := range searched {
		for dir := start; ; dir = filepath.Dir(dir) {
			if IsRepoDir(dir) {
				return dir, searched
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return "", searched
}

// findRepoDir is FindRepoDir without the searched folders.
func findRepoDir() string {
	dir, _ := FindRepoDir()
	return dir
}

// IsRepoDir reports whether dir holds a go.mod declaring ModulePath.
func IsRepoDir(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == ModulePath
		}
	}
	return false
}

// findCUDAPlugin returns the CUDA plugin to load: the absolute path in $CIFARLAB_CUDA_PLUGIN,
// else the name of a "cuda" plugin in go-xla's folders; "" when there is none. A set variable
// naming a missing file gives a *BackendError.
func findCUDAPlugin(requested string) (string, error) {
	if p := strings.TrimSpace(os.Getenv(CUDAPluginEnv)); p != "" {
		abs, err := filepath.Abs(p)
		if err == nil && !isFile(abs) {
			err = os.ErrNotExist
		}
		if err != nil {
			return "", &BackendError{Requested: requested,
				Missing: "the CUDA PJRT plugin named by $" + CUDAPluginEnv + "=" + p + " does not exist", Err: err,
				Fix: "set $" + CUDAPluginEnv + " to the absolute path of the plugin (e.g. SITE/jax_plugins/xla_cuda13/" +
					"xla_cuda_plugin.so of pip's jax-cuda13-pjrt), or unset it"}
		}
		setJaxCUDADataDir(abs)
		return abs, nil
	}
	return xlaPlugin("cuda"), nil
}

// setJaxCUDADataDir points XLA at pip's CUDA tools (ptxas, libdevice) for the plugin of
// jax-cuda1N-pjrt, SITE/jax_plugins/xla_cudaN/xla_cuda_plugin.so, whose NVIDIA libraries live in
// SITE/nvidia/cuN: it adds --xla_gpu_cuda_data_dir to $XLA_FLAGS unless already set there, as
// go-xla does for its own plugin layout.
func setJaxCUDADataDir(plugin string) {
	dir := jaxCUDADataDir(plugin)
	if dir == "" || strings.Contains(os.Getenv("XLA_FLAGS"), "--xla_gpu_cuda_data_dir") {
		return
	}
	flags := strings.TrimSpace(os.Getenv("XLA_FLAGS") + " --xla_gpu_cuda_data_dir=" + dir)
	_ = os.Setenv("XLA_FLAGS", flags)
}

// jaxCUDADataDir returns SITE/nvidia/cuN for SITE/jax_plugins/xla_cudaN/<plugin>.so when that
// folder has bin/ptxas or nvvm/libdevice, else "".
func jaxCUDADataDir(plugin string) string {
	pluginDir := filepath.Dir(plugin)
	version, ok := strings.CutPrefix(filepath.Base(pluginDir), "xla_cuda")
	if !ok || version == "" || filepath.Base(filepath.Dir(pluginDir)) != "jax_plugins" {
		return ""
	}
	dir := filepath.Join(filepath.Dir(filepath.Dir(pluginDir)), "nvidia", "cu"+version)
	if isFile(filepath.Join(dir, "bin", "ptxas")) || isDir(filepath.Join(dir, "nvvm", "libdevice")) {
		return dir
	}
	return ""
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
