package kernel

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/internal/plugins"
)

// pythonCandidates are the interpreters searched for pip-installed plugins: the lab venv,
// Debian's /usr/bin/python3 and the python3 first on PATH.
func pythonCandidates(repo Repo) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p == "" || seen[p] {
			return
		}
		if fileExists(p) {
			seen[p] = true
			out = append(out, p)
		}
	}
	if repo.Dir != "" {
		add(filepath.Join(repo.VenvDir(), "bin", "python"))
	}
	add("/usr/bin/python3")
	if p, err := exec.LookPath("python3"); err == nil {
		add(p)
	}
	return out
}

// sitePackages returns the sys.path folders of the given Python interpreters.
func sitePackages(ctx context.Context, pythons []string) []string {
	var dirs []string
	seen := map[string]bool{}
	for _, py := range pythons {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		out, err := exec.CommandContext(ctx, py, "-c", "import sys, json; print(json.dumps(sys.path))").Output()
		cancel()
		if err != nil {
			continue
		}
		var paths []string
		if json.Unmarshal(out, &paths) != nil {
			continue
		}
		for _, p := range paths {
			if p != "" && !seen[p] && dirExists(p) {
				seen[p] = true
				dirs = append(dirs, p)
			}
		}
	}
	return dirs
}

// chooseCPUBackend picks the CPU kernel's backend: a forced value, an explicit plugin file,
// else the XLA CPU plugin that backends.New("cpu") would load (plugins.FindXLACPU:
// $CIFARLAB_XLA_CPU_PLUGIN or $CIFARLAB_CPU_PLUGIN, go-xla's plugin folders, pip's
// lammps-jax-pjrt-cpu in repo's .venv, the active venv) when it starts, else the pure-Go backend
// "go", which always works. So the CPU kernel and "cpu" in code mean the same backend. A plugin
// found by searching that does not start gives "go" with the reason; one named by a variable
// gives an error.
func chooseCPUBackend(repo Repo, o BackendOptions) (backend, error) {
	p, err := findCPUPlugin(repo, o)
	if err != nil {
		return backend{}, err
	}
	return backendOf(p, "")
}

// findCPUPlugin finds what chooseCPUBackend makes the CPU kernel's backend from.
func findCPUPlugin(repo Repo, o BackendOptions) (kernelPlugin, error) {
	if o.CPU != "" {
		return kernelPlugin{gomlx: o.CPU, reason: "set with --cpu-backend"}, nil
	}
	if o.CPUPlugin != "" {
		return kernelPlugin{path: o.CPUPlugin, reason: "XLA CPU plugin given"}, nil
	}
	loc, err := plugins.FindXLACPU(repo.Dir)
	if err != nil {
		return kernelPlugin{}, err
	}
	if loc.Path == "" {
		return kernelPlugin{gomlx: "go", reason: "pure-Go backend (no XLA CPU plugin found)"}, nil
	}
	// Load it once (an XLA backend created and released), so that a plugin that cannot start on
	// this machine does not become the kernel's backend (GOMLX_BACKEND=xla:cpu never falls back,
	// and every notebook would fail).
	b, err := backends.New("xla:" + loc.Path)
	if err != nil {
		if loc.Explicit {
			return kernelPlugin{}, fmt.Errorf("the XLA CPU plugin named by %s does not start: %w", loc.Source, err)
		}
		return kernelPlugin{gomlx: "go", reason: fmt.Sprintf("pure-Go backend (the XLA CPU plugin %s in %s does not start: %v)",
			loc.Path, loc.Source, err)}, nil
	}
	b.Finalize()
	return kernelPlugin{path: loc.Path, reason: "XLA CPU plugin found in " + loc.Source}, nil
}

// chooseCUDABackend picks the CUDA kernel's backend: a forced value, an explicit plugin
// file, the plugin of $CIFARLAB_CUDA_SITE (which the kernel then also sets), go-xla's "cuda"
// plugin when installed in its folders, the xla_cuda_plugin.so of a
// pip-installed jax-cuda13-pjrt (or -cuda12-), else "xla:cuda", which fails at run time
// with cifarlib's "no CUDA plugin" message until a plugin is installed.
//
// linkDir is a folder Install owns (DATA_DIR/cifarlab/pjrt-cuda), used for pip plugins.
func chooseCUDABackend(ctx context.Context, repo Repo, linkDir string, o BackendOptions) (backend, error) {
	p, err := findCUDAPlugin(ctx, repo, o)
	if err != nil {
		return backend{}, err
	}
	return backendOf(p, linkDir)
}

// findCUDAPlugin finds what chooseCUDABackend makes the CUDA kernel's backend from.
func findCUDAPlugin(ctx context.Context, repo Repo, o BackendOptions) (kernelPlugin, error) {
	if o.CUDA != "" {
		return kernelPlugin{gomlx: o.CUDA, reason: "set with --cuda-backend"}, nil
	}
	if p := cmp.Or(o.CUDAPlugin, os.Getenv(CUDAPluginEnv)); p != "" {
		jax := plugins.NameOf(p) == "" && filepath.Base(p) == "xla_cuda_plugin.so"
		return kernelPlugin{path: p, jax: jax, reason: "CUDA plugin given"}, nil
	}
	site, err := plugins.CUDASitePlugin()
	if err != nil {
		return kernelPlugin{}, err
	}
	if site != "" {
		return kernelPlugin{path: site, jax: true, site: true, reason: "CUDA plugin of $" + plugins.CUDASiteEnv}, nil
	}
	if p, ok := plugins.FindFiles()["cuda"]; ok {
		return kernelPlugin{path: p, reason: "go-xla CUDA plugin found"}, nil
	}
	sites := sitePackages(ctx, pythonCandidates(repo))
	if ps := plugins.FindJaxCUDA(sites); len(ps) > 0 {
		return kernelPlugin{path: ps[0], jax: true, reason: "CUDA plugin of pip's jax-cuda-pjrt found"}, nil
	}
	return kernelPlugin{gomlx: "xla:cuda", reason: "no CUDA PJRT plugin found (pip install jax-cuda13-pjrt jax-cuda13-plugin, then re-run cifarlab kernel install)"}, nil
}
