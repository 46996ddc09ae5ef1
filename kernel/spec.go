package kernel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/cifarlib/backends"

	"github.com/cifarlab/cifarlab/internal/plugins"
)

// Names of the two kernelspecs (the folders under DATA_DIR/kernels, and what notebooks
// record in metadata.kernelspec.name) and their display names.
const (
	CPUKernel       = "cifarlab-cpu"
	CUDAKernel      = "cifarlab-cuda"
	CPUDisplayName  = "Go (cifarlab, CPU)"
	CUDADisplayName = "Go (cifarlab, CUDA)"
)

// Environment variables the kernels set, besides PATH and the backend's own.
const (
	// GoMLXBackendEnv selects GoMLX's backend ("go", "xla:cpu", "xla:cuda" or "xla:/path/plugin.so").
	GoMLXBackendEnv = "GOMLX_BACKEND"
	// NoAutoInstallEnv stops go-xla from downloading plugins from GitHub at run time.
	NoAutoInstallEnv = "GOMLX_NO_AUTO_INSTALL"
	// KernelEnv tells notebook code which cifarlab kernel runs it: "cpu" or "cuda".
	KernelEnv = "CIFARLAB_KERNEL"
)

// KernelSpec is the content of a Jupyter kernel.json file.
type KernelSpec struct {
	Argv          []string          `json:"argv"`
	DisplayName   string            `json:"display_name"`
	Language      string            `json:"language"`
	InterruptMode string            `json:"interrupt_mode"`
	Env           map[string]string `json:"env"`
	Metadata      SpecMetadata      `json:"metadata"`
}

// SpecMetadata is the "metadata" of a cifarlab kernel.json: what doctor reads back.
type SpecMetadata struct {
	Cifarlab KernelInfo `json:"cifarlab"`
}

// KernelInfo records how a kernelspec was made.
type KernelInfo struct {
	// Kernel is "cpu" or "cuda".
	Kernel string `json:"kernel"`
	// Repo is the repository the kernel compiles cells against (gonb --go_work).
	Repo string `json:"repo"`
	// Backend is the GOMLX_BACKEND value and BackendReason why it was chosen.
	Backend       string `json:"backend"`
	BackendReason string `json:"backend_reason"`
}

// Backend is the GoMLX backend configuration of one kernel.
type Backend struct {
	// GoMLX is the value of GOMLX_BACKEND.
	GoMLX string
	// Env holds extra variables it needs (PJRT_PLUGIN_LIBRARY_PATH).
	Env map[string]string
	// Reason says how it was chosen, for install output and doctor.
	Reason string
	// Links are symbolic links Install must create (see JaxCUDABackend).
	Links []Link
}

// Link is a symbolic link at Path pointing to Target.
type Link struct{ Path, Target string }

// backendForPlugin configures the xla backend for a plugin file: by name with its folder
// as go-xla's search path when go-xla recognises the file name (so name-based defaults,
// like shared buffers for "cpu", apply), else by absolute path.
func backendForPlugin(path, reason string) (Backend, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Backend{}, err
	}
	if !fileExists(abs) {
		return Backend{}, fmt.Errorf("PJRT plugin %s does not exist", abs)
	}
	if name := plugins.NameOf(abs); name != "" {
		return Backend{GoMLX: "xla:" + name, Env: map[string]string{PJRTPluginPathEnv: filepath.Dir(abs)}, Reason: reason + ": " + abs}, nil
	}
	return Backend{GoMLX: "xla:" + abs, Reason: reason + ": " + abs}, nil
}

// BackendOptions steer the backend choice; empty fields mean "detect".
type BackendOptions struct {
	// CPU and CUDA force the GOMLX_BACKEND value of each kernel (e.g. "go", "xla:cuda").
	CPU, CUDA string
	// CPUPlugin and CUDAPlugin name plugin files (default $CIFARLAB_CPU_PLUGIN,
	// $CIFARLAB_CUDA_PLUGIN).
	CPUPlugin, CUDAPlugin string
}

// ChooseCPUBackend picks the CPU kernel's backend: a forced value, an explicit plugin file,
// else the XLA CPU plugin that backends.New("cpu") would load (plugins.FindXLACPU:
// $CIFARLAB_XLA_CPU_PLUGIN or $CIFARLAB_CPU_PLUGIN, go-xla's plugin folders, pip's
// lammps-jax-pjrt-cpu in repo's .venv, the active venv) when it starts, else the pure-Go backend
// "go", which always works. So the CPU kernel and "cpu" in code mean the same backend. A plugin
// found by searching that does not start gives "go" with the reason; one named by a variable
// gives an error.
func ChooseCPUBackend(repo Repo, o BackendOptions) (Backend, error) {
	if o.CPU != "" {
		return Backend{GoMLX: o.CPU, Reason: "set with --cpu-backend"}, nil
	}
	if o.CPUPlugin != "" {
		return backendForPlugin(o.CPUPlugin, "XLA CPU plugin given")
	}
	loc, err := plugins.FindXLACPU(repo.Dir)
	if err != nil {
		return Backend{}, err
	}
	if loc.Path == "" {
		return Backend{GoMLX: "go", Reason: "pure-Go backend (no XLA CPU plugin found)"}, nil
	}
	// Load it once, so that a plugin that cannot start on this machine does not become the
	// kernel's backend (GOMLX_BACKEND=xla:cpu never falls back, and every notebook would fail).
	if err := startXLAPlugin(loc.Path); err != nil {
		if loc.Explicit {
			return Backend{}, fmt.Errorf("the XLA CPU plugin named by %s does not start: %w", loc.Source, err)
		}
		return Backend{GoMLX: "go", Reason: fmt.Sprintf("pure-Go backend (the XLA CPU plugin %s in %s does not start: %v)",
			loc.Path, loc.Source, err)}, nil
	}
	return backendForPlugin(loc.Path, "XLA CPU plugin found in "+loc.Source)
}

// startXLAPlugin creates (and releases) an XLA backend on the plugin file, to check it loads.
func startXLAPlugin(path string) error {
	b, err := backends.New("xla:" + path)
	if err != nil {
		return err
	}
	b.Finalize()
	return nil
}

// ChooseCUDABackend picks the CUDA kernel's backend: a forced value, an explicit plugin
// file, the plugin of $CIFARLAB_CUDA_SITE (which the kernel then also sets), go-xla's "cuda"
// plugin when installed in its folders, the xla_cuda_plugin.so of a
// pip-installed jax-cuda13-pjrt (or -cuda12-), else "xla:cuda", which fails at run time
// with cifarlib's "no CUDA plugin" message until a plugin is installed.
//
// linkDir is a folder Install owns (DATA_DIR/cifarlab/pjrt-cuda), used for pip plugins.
func ChooseCUDABackend(ctx context.Context, repo Repo, linkDir string, o BackendOptions) (Backend, error) {
	if o.CUDA != "" {
		return Backend{GoMLX: o.CUDA, Reason: "set with --cuda-backend"}, nil
	}
	if p := firstNonEmpty(o.CUDAPlugin, os.Getenv(CUDAPluginEnv)); p != "" {
		if plugins.NameOf(p) == "" && filepath.Base(p) == "xla_cuda_plugin.so" {
			return JaxCUDABackend(p, linkDir, "CUDA plugin given")
		}
		return backendForPlugin(p, "CUDA plugin given")
	}
	site, err := plugins.CUDASitePlugin()
	if err != nil {
		return Backend{}, err
	}
	if site != "" {
		b, err := JaxCUDABackend(site, linkDir, "CUDA plugin of $"+plugins.CUDASiteEnv)
		if err == nil {
			b.Env[plugins.CUDASiteEnv] = os.Getenv(plugins.CUDASiteEnv)
		}
		return b, err
	}
	if p, ok := plugins.FindFiles()["cuda"]; ok {
		return backendForPlugin(p, "go-xla CUDA plugin found")
	}
	if ps := plugins.FindJaxCUDA(SitePackages(ctx, PythonCandidates(repo))); len(ps) > 0 {
		return JaxCUDABackend(ps[0], linkDir, "CUDA plugin of pip's jax-cuda-pjrt found")
	}
	return Backend{GoMLX: "xla:cuda", Reason: "no CUDA PJRT plugin found (pip install jax-cuda13-pjrt jax-cuda13-plugin, then re-run cifarlab kernel install)"}, nil
}

// JaxCUDABackend configures the CUDA kernel for the plugin of pip's jax-cuda13-pjrt (or
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
func JaxCUDABackend(plugin, linkDir, reason string) (Backend, error) {
	abs, err := filepath.Abs(plugin)
	if err != nil {
		return Backend{}, err
	}
	if !fileExists(abs) {
		return Backend{}, fmt.Errorf("CUDA plugin %s does not exist", abs)
	}
	if linkDir == "" {
		return Backend{}, fmt.Errorf("no folder for the links to the CUDA plugin %s", abs)
	}
	pluginDir := filepath.Dir(abs)                // SITE/jax_plugins/xla_cuda13
	site := filepath.Dir(filepath.Dir(pluginDir)) // SITE
	linkPluginDir := filepath.Join(linkDir, "jax_plugins", filepath.Base(pluginDir))
	b := Backend{
		GoMLX:  "xla:cuda",
		Env:    map[string]string{PJRTPluginPathEnv: linkPluginDir},
		Reason: reason + ": " + abs,
		Links:  []Link{{Path: filepath.Join(linkPluginDir, "pjrt_c_api_cuda_plugin.so"), Target: abs}},
	}
	if nv := filepath.Join(site, "nvidia"); dirExists(nv) {
		b.Links = append(b.Links, Link{Path: filepath.Join(linkDir, "nvidia"), Target: nv})
		if data := plugins.JaxCUDADataDir(abs); data != "" {
			b.Env["XLA_FLAGS"] = "--xla_gpu_cuda_data_dir=" + data
		}
	} else {
		b.Reason += " (warning: no " + nv + ": on a GPU machine bash kernel/setup.sh installs the NVIDIA libraries, kernel/requirements-cuda-libs.txt)"
	}
	return b, nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// SupervisorName is the binary, in REPO/.bin, that runs GoNB so that nothing the kernel
// started outlives it (cmd/cifarlab-kernel; Install builds it).
const SupervisorName = "cifarlab-kernel"

// KernelArgv is a cifarlab kernelspec's argv: GoNB under the supervisor,
// REPO/.bin/cifarlab-kernel -- REPO/.bin/gonb --kernel {connection_file} --go_work=REPO.
func KernelArgv(repo Repo) []string {
	return []string{repo.Tool(SupervisorName), "--", repo.Tool("gonb"), "--kernel", "{connection_file}", "--go_work=" + repo.Dir}
}

// NewKernelSpec builds the kernel.json of one cifarlab kernel ("cpu" or "cuda"): the pinned
// gonb from REPO/.bin started with --go_work=REPO under the supervisor (KernelArgv), PATH = REPO/.bin, the go command's
// folder (go.mod's toolchain's bin/), then the server's PATH, the Go environment of GoEnvPins
// with the cells' build flags (CellGoFlags) in its GOFLAGS, their module proxy (CellGoProxy,
// which pins go.mod's versions with gt.CellPins), GOTOOLCHAIN=go.mod's toolchain line, and the backend's
// variables.
func NewKernelSpec(repo Repo, kind string, gt GoTools, b Backend) KernelSpec {
	display := CPUDisplayName
	if kind == "cuda" {
		display = CUDADisplayName
	}
	env := map[string]string{
		"PATH":           repo.BinDir() + string(os.PathListSeparator) + gt.BinDir + string(os.PathListSeparator) + "${PATH}",
		GoMLXBackendEnv:  b.GoMLX,
		NoAutoInstallEnv: "1",
		KernelEnv:        kind,
		RepoEnv:          repo.Dir,
	}
	// The Go environment of GoNB's builds (GoEnvPins): GoNB's --go_work needs workspace mode (a
	// GOWORK=off inherited from the server would make the kernel die at start, "go: no go.work
	// file found"), and a user's GOFLAGS=-mod=mod would break every cell.
	for k, v := range GoEnvPins() {
		env[k] = v
	}
	env["GOFLAGS"] = CellGoFlags(b)
	if proxy := CellGoProxy(gt); proxy != "" {
		env["GOPROXY"] = proxy
	}
	// go.mod's toolchain: GoNB, gopls and every go command of a cell run that release whatever
	// GOTOOLCHAIN the server has (e.g. local, on an older Go); gt.BinDir, first on PATH, is its bin/.
	if gt.Toolchain != "" {
		env["GOTOOLCHAIN"] = gt.Toolchain
	}
	for k, v := range b.Env {
		env[k] = v
	}
	return KernelSpec{
		Argv:          KernelArgv(repo),
		DisplayName:   display,
		Language:      "go",
		InterruptMode: "message",
		Env:           env,
		Metadata: SpecMetadata{Cifarlab: KernelInfo{
			Kernel: kind, Repo: repo.Dir, Backend: b.GoMLX, BackendReason: b.Reason,
		}},
	}
}
