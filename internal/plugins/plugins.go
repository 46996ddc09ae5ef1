// Package plugins finds the PJRT plugins the lab runs on, without loading or downloading
// anything: XLA's CPU plugin (PyPI's lammps-jax-pjrt-cpu in the checkout's .venv, go-xla's
// folders, or a file named by a variable), the CUDA plugin (PyPI's jax-cuda13-pjrt or go-xla's),
// and whether an NVIDIA GPU is present. It is the lab's plumbing, shared by backends.New,
// the kernel installer and doctor.
package plugins

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cifarlab/cifarlab/internal/repo"
)

// Environment variables that name plugin files explicitly; they win over any search.
const (
	// XLACPUEnv names XLA's CPU PJRT plugin file (pjrt_c_api_cpu_plugin.so). A path that does
	// not exist is an error, not a fallback.
	XLACPUEnv = "CIFARLAB_XLA_CPU_PLUGIN"
	// KernelCPUEnv is the name the kernel installer uses for the same file; it is read when
	// XLACPUEnv is unset.
	KernelCPUEnv = "CIFARLAB_CPU_PLUGIN"
	// CUDAEnv names a CUDA PJRT plugin file, e.g. the xla_cuda_plugin.so of pip's
	// jax-cuda13-pjrt package.
	CUDAEnv = "CIFARLAB_CUDA_PLUGIN"
	// PJRTPathEnv is go-xla's list of folders to search for plugins (":"-separated).
	PJRTPathEnv = "PJRT_PLUGIN_LIBRARY_PATH"
)

// XLACPUVenvGlob is where pip installs XLA's CPU PJRT plugin (PyPI package lammps-jax-pjrt-cpu,
// see kernel/requirements-xla-cpu.txt) inside a virtual environment.
const XLACPUVenvGlob = "lib/python3*/site-packages/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so"

// Install hints, part of the error messages of backends.New and of doctor.
const (
	// XLACPUInstallHint says how to get XLA's CPU PJRT plugin.
	XLACPUInstallHint = "install it into the repository's venv with `.venv/bin/pip install --no-deps --require-hashes " +
		"-r kernel/requirements-xla-cpu.txt` (PyPI's lammps-jax-pjrt-cpu), or set " + XLACPUEnv +
		" to a pjrt_c_api_cpu_plugin.so; or use -backend go"
	// CUDAInstallHint says how to get the CUDA PJRT plugin.
	CUDAInstallHint = "install the CUDA PJRT plugin: `bash kernel/setup.sh` puts PyPI's jax-cuda13-pjrt into .venv " +
		"(kernel/requirements-cuda.txt; on a GPU machine also its NVIDIA libraries, kernel/requirements-cuda-libs.txt), or set " +
		CUDASiteEnv + " to a site-packages that has jax-cuda13-pjrt and the nvidia-* wheels, " +
		"for the CUDA kernel, or set " + CUDAEnv + " to its xla_cuda_plugin.so; or `go run " +
		"github.com/gomlx/go-xla/cmd/pjrt_installer@latest -plugin=cuda13` puts it with its nvidia/ libraries into " +
		"~/.local/lib/go-xla (or a folder named in PJRT_PLUGIN_LIBRARY_PATH); or use -backend cpu"
)

// Location is a PJRT plugin file found by FindXLACPU.
type Location struct {
	// Path is the absolute path of the plugin's shared library; empty when none was found.
	Path string
	// Source says how it was found, e.g. "$CIFARLAB_XLA_CPU_PLUGIN", "go-xla's plugin folders"
	// or "the venv /work/main/.venv".
	Source string
	// Explicit is true when an environment variable named the file.
	Explicit bool
}

// EnvError is returned when an environment variable names a plugin file that does not exist.
type EnvError struct {
	// Var and Value are the variable and what it holds.
	Var, Value string
	// Plugin says which plugin, e.g. "XLA CPU plugin".
	Plugin string
	// Fix says what to set instead.
	Fix string
	// Err is the underlying error (os.ErrNotExist, or a path error).
	Err error
}

// Missing says what is missing: "the XLA CPU plugin named by $VAR=VALUE does not exist".
func (e *EnvError) Missing() string {
	return "the " + e.Plugin + " named by $" + e.Var + "=" + e.Value + " does not exist"
}

func (e *EnvError) Error() string { return fmt.Sprintf("%s (%v): %s", e.Missing(), e.Err, e.Fix) }

// Unwrap returns the underlying error.
func (e *EnvError) Unwrap() error { return e.Err }

// envFile returns the absolute path named by the variable env, "" when it is unset, or an
// *EnvError when it names no file.
func envFile(env, plugin, fix string) (string, error) {
	p := strings.TrimSpace(os.Getenv(env))
	if p == "" {
		return "", nil
	}
	abs, err := filepath.Abs(p)
	if err == nil && !isFile(abs) {
		err = os.ErrNotExist
	}
	if err != nil {
		return "", &EnvError{Var: env, Value: p, Plugin: plugin, Fix: fix, Err: err}
	}
	return abs, nil
}

// FindXLACPU locates XLA's CPU PJRT plugin without loading it or downloading anything. The
// first match wins:
//
//  1. $CIFARLAB_XLA_CPU_PLUGIN (or the kernel's $CIFARLAB_CPU_PLUGIN): a file path;
//  2. go-xla's own plugin folders ($PJRT_PLUGIN_LIBRARY_PATH as it was when the process
//     started, or ~/.local/lib/go-xla, /usr/local/lib/go-xla and the library paths), for a
//     plugin named "cpu" or "cpu_vX";
//  3. the checkout's venv: REPO/.venv/lib/python3*/site-packages/lammps_jax_pjrt_cpu/
//     pjrt_c_api_cpu_plugin.so, where REPO is repoDir, or when that is "" the checkout
//     repo.Find finds;
//  4. the active venv, $VIRTUAL_ENV, at the same relative path.
//
// When nothing is installed it returns a zero Location and a nil error. A variable naming a
// missing file gives an *EnvError.
func FindXLACPU(repoDir string) (Location, error) {
	for _, env := range []string{XLACPUEnv, KernelCPUEnv} {
		abs, err := envFile(env, "XLA CPU plugin", "set $"+env+" to the absolute path of pjrt_c_api_cpu_plugin.so "+
			"(pip install --no-deps lammps-jax-pjrt-cpu==0.11.2 puts it in site-packages/lammps_jax_pjrt_cpu), or unset it")
		if err != nil {
			return Location{}, err
		}
		if abs != "" {
			return Location{Path: abs, Source: "$" + env, Explicit: true}, nil
		}
	}
	if name := GoXLAName("cpu"); name != "" {
		if p := GoXLA()[name]; p != "" && filepath.IsAbs(p) && isFile(p) {
			return Location{Path: p, Source: "go-xla's plugin folders"}, nil
		}
	}
	if repoDir == "" {
		repoDir = repo.Dir()
	}
	if repoDir != "" {
		venv := filepath.Join(repoDir, ".venv")
		if p := venvXLACPU(venv); p != "" {
			return Location{Path: p, Source: "the venv " + venv}, nil
		}
	}
	if venv := os.Getenv("VIRTUAL_ENV"); venv != "" && filepath.IsAbs(venv) {
		if p := venvXLACPU(venv); p != "" {
			return Location{Path: p, Source: "the active venv $VIRTUAL_ENV=" + venv}, nil
		}
	}
	return Location{}, nil
}

// venvXLACPU returns the plugin installed by pip in the venv folder, or "". With several
// Python versions the newest (python3.N with the largest N) wins.
func venvXLACPU(venv string) string {
	matches, _ := filepath.Glob(filepath.Join(venv, XLACPUVenvGlob))
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

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
