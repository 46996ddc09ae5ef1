package kernel

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/cifarlab/cifarlab/internal/plugins"
)

// describeCUDAPlugins lists plugin files once each (links resolved), with the pip package and
// version of jax-cudaN-pjrt's: "jax-cuda13-pjrt 0.11.2 at SITE/jax_plugins/xla_cuda13/xla_cuda_plugin.so".
func describeCUDAPlugins(paths []string) string {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		if pkg := plugins.JaxCUDAPackage(p); pkg != "" {
			p = pkg + " at " + p
		}
		out = append(out, p)
	}
	return strings.Join(out, ", ")
}

// checkXLACPUPlugin reports the XLA CPU plugin that backends.New("cpu") and the CPU
// kernel use (plugins.FindXLACPU), or its absence: optional, the pure-Go backend works.
func checkXLACPUPlugin(repo Repo) Check {
	loc, err := plugins.FindXLACPU(repo.Dir)
	switch {
	case err != nil:
		return Check{Name: "XLA CPU plugin", Status: StatusFail, Detail: err.Error(),
			Fix: "unset the variable or point it at pjrt_c_api_cpu_plugin.so"}
	case loc.Path != "":
		return Check{Name: "XLA CPU plugin", Status: StatusOK, Detail: loc.Path + " (" + loc.Source + ")"}
	}
	return Check{Name: "XLA CPU plugin", Status: StatusAbsent,
		Detail: "not found ($" + plugins.XLACPUEnv + ", go-xla's plugin folders, " + repo.VenvDir() +
			", $VIRTUAL_ENV); the CPU kernel uses the pure-Go backend",
		Fix: "optional: " + plugins.XLACPUInstallHint + "; then re-run cifarlab kernel install"}
}

// checkCUDAPlugin says which CUDA PJRT plugins there are ($CIFARLAB_CUDA_SITE's, go-xla's, pip's
// jax-cuda13-pjrt) and checks the NVIDIA libraries of one (checkCUDALibs), or says how to get one.
func checkCUDAPlugin(ctx context.Context, repo Repo) []Check {
	var checks []Check
	found := []string{}
	if p, err := plugins.CUDASitePlugin(); err != nil {
		checks = append(checks, Check{Name: "CUDA plugin", Status: StatusFail, Detail: err.Error(), Fix: "fix or unset $" + plugins.CUDASiteEnv})
	} else if p != "" {
		found = append(found, p)
	}
	if p, ok := plugins.FindFiles()["cuda"]; ok {
		found = append(found, p)
	}
	found = append(found, plugins.FindJaxCUDA(sitePackages(ctx, pythonCandidates(repo)))...)
	if len(found) == 0 {
		return append(checks, Check{Name: "CUDA plugin", Status: StatusAbsent, Detail: "no CUDA PJRT plugin found (go-xla folders, pip's jax-cuda13-pjrt)",
			Fix: "on a GPU machine: bash kernel/setup.sh (jax-cuda13-pjrt and its NVIDIA wheels; setup installs them only where it finds a GPU, " +
				"CIFARLAB_CUDA=1 bash kernel/setup.sh installs them anyway), or set " + plugins.CUDASiteEnv +
				" to a site-packages that has them; then re-run cifarlab kernel install"})
	}
	checks = append(checks, Check{Name: "CUDA plugin", Status: StatusOK, Detail: describeCUDAPlugins(found)})
	return append(checks, checkCUDALibs(cudaPluginToCheck(found), plugins.HasNvidiaGPU())...)
}

// checkGPUs lists the NVIDIA GPUs nvidia-smi sees: optional, the CPU kernel needs none.
func checkGPUs(ctx context.Context) Check {
	gpus, err := plugins.GPUs(ctx)
	switch {
	case err != nil:
		return Check{Name: "GPUs", Status: StatusAbsent, Detail: "none visible: " + err.Error(), Fix: "optional: the CUDA kernel needs an NVIDIA GPU and its driver (nvidia-smi)"}
	case len(gpus) == 0:
		return Check{Name: "GPUs", Status: StatusAbsent, Detail: "nvidia-smi lists no GPU", Fix: "optional: check the NVIDIA driver"}
	}
	return Check{Name: "GPUs", Status: StatusOK, Detail: strings.Join(gpus, "; ")}
}
