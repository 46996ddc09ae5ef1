package kernel

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"time"

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
