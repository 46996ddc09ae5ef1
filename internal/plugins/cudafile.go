package plugins

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"

	"github.com/cifarlab/cifarlab/internal/repo"
)

// GoXLACUDAChecksEnv turns go-xla's check for NVIDIA libraries next to a CUDA plugin on or off
// ("0" is off). go-xla looks for PLUGIN/../../nvidia, which is never where pip puts them for
// jax-cudaN-pjrt (SITE/nvidia), so for that layout the check only prints a misleading warning.
const GoXLACUDAChecksEnv = "GOPJRT_CUDA_CHECKS"

// CUDAFile is a CUDA PJRT plugin file, found without loading it.
type CUDAFile struct {
	// Path is the plugin file, absolute, with symbolic links resolved.
	Path string
	// Package is the pip package and version for the plugin of jax-cudaN-pjrt, e.g.
	// "jax-cuda13-pjrt 0.11.2"; "" when unknown (e.g. go-xla's installer).
	Package string
	// Source says how it was found, e.g. "$CIFARLAB_CUDA_PLUGIN" or "the venv /work/main/.venv".
	Source string
}

// String describes the file: "jax-cuda13-pjrt 0.11.2 at PATH", or PATH.
func (f CUDAFile) String() string {
	if f.Package != "" {
		return f.Package + " at " + f.Path
	}
	return f.Path
}

// FindCUDAFile locates an installed CUDA PJRT plugin without loading it, for messages and
// doctor: $CIFARLAB_CUDA_PLUGIN, else the plugin in $CIFARLAB_CUDA_SITE, else a "cuda" plugin file in go-xla's folders (by name, as the
// environment is now: the CUDA kernel points $PJRT_PLUGIN_LIBRARY_PATH at its plugin), else
// pip's jax-cudaN-pjrt in the checkout's venv (repoDir, or the checkout repo.Find finds when
// ""), else in $VIRTUAL_ENV. It returns a zero CUDAFile when there is none, and an *EnvError
// when the variable names a missing file.
func FindCUDAFile(repoDir string) (CUDAFile, error) {
	abs, err := envFile(CUDAEnv, "CUDA PJRT plugin", "set $"+CUDAEnv+" to the absolute path of the plugin, or unset it")
	if err != nil {
		return CUDAFile{}, err
	}
	if abs != "" {
		return cudaFile(abs, "$"+CUDAEnv), nil
	}
	if abs, err = CUDASitePlugin(); err != nil {
		return CUDAFile{}, err
	}
	if abs != "" {
		return cudaFile(abs, "$"+CUDASiteEnv+"="+os.Getenv(CUDASiteEnv)), nil
	}
	if p, ok := FindFiles()["cuda"]; ok {
		return cudaFile(p, "go-xla's plugin folders"), nil
	}
	if repoDir == "" {
		repoDir = repo.Dir()
	}
	var venvs [][2]string
	if repoDir != "" {
		venv := filepath.Join(repoDir, ".venv")
		venvs = append(venvs, [2]string{venv, "the venv " + venv})
	}
	if venv := os.Getenv("VIRTUAL_ENV"); venv != "" && filepath.IsAbs(venv) {
		venvs = append(venvs, [2]string{venv, "the active venv $VIRTUAL_ENV=" + venv})
	}
	for _, v := range venvs {
		sites, _ := filepath.Glob(filepath.Join(v[0], "lib", "python3*", "site-packages"))
		if found := FindJaxCUDA(sites); len(found) > 0 {
			return cudaFile(found[0], v[1]), nil
		}
	}
	return CUDAFile{}, nil
}

func cudaFile(path, source string) CUDAFile {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return CUDAFile{Path: path, Package: JaxCUDAPackage(path), Source: source}
}

// JaxCUDAPackage returns "jax-cudaN-pjrt VERSION" for the plugin file of pip's jax-cudaN-pjrt
// (SITE/jax_plugins/xla_cudaN/xla_cuda_plugin.so, or a link to it), read from the package's
// version.py next to it; "" for other files.
func JaxCUDAPackage(plugin string) string {
	if real, err := filepath.EvalSymlinks(plugin); err == nil {
		plugin = real
	}
	dir := filepath.Dir(plugin)
	cuda, ok := strings.CutPrefix(filepath.Base(dir), "xla_cuda")
	if !ok || cuda == "" || filepath.Base(filepath.Dir(dir)) != "jax_plugins" {
		return ""
	}
	name := "jax-cuda" + cuda + "-pjrt"
	f, err := os.Open(filepath.Join(dir, "version.py"))
	if err != nil {
		return name
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "_version ="); ok {
			if v := strings.Trim(strings.TrimSpace(rest), `"'`); v != "" {
				return name + " " + v
			}
		}
	}
	return name
}

// IsJaxCUDALayout reports whether plugin sits where pip's jax-cudaN-pjrt puts it,
// .../jax_plugins/xla_cudaN/FILE (the CUDA kernel's link to it keeps that shape).
func IsJaxCUDALayout(plugin string) bool {
	dir := filepath.Dir(plugin)
	cuda, ok := strings.CutPrefix(filepath.Base(dir), "xla_cuda")
	return ok && cuda != "" && filepath.Base(filepath.Dir(dir)) == "jax_plugins"
}

// PrepareJaxCUDA readies the process for loading a CUDA plugin: for pip's jax-cudaN-pjrt layout
// it points XLA at pip's CUDA tools (SetJaxCUDADataDir) and turns off go-xla's NVIDIA library
// check, which looks in the wrong folder for that layout (unless $GOPJRT_CUDA_CHECKS is set).
// Other layouts are left to go-xla.
func PrepareJaxCUDA(plugin string) {
	if !IsJaxCUDALayout(plugin) {
		return
	}
	SetJaxCUDADataDir(plugin)
	if _, set := os.LookupEnv(GoXLACUDAChecksEnv); !set {
		_ = os.Setenv(GoXLACUDAChecksEnv, "0")
	}
}
