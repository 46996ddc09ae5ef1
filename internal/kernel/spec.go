package kernel

import (
	"os"
)

// Names of the two kernelspecs (the folders under DATA_DIR/kernels, and what notebooks
// record in metadata.kernelspec.name) and their display names.
const (
	CPUKernel       = "cifarlab-cpu"
	CUDAKernel      = "cifarlab-cuda"
	cpuDisplayName  = "Go (cifarlab, CPU)"
	cudaDisplayName = "Go (cifarlab, CUDA)"
)

// Environment variables the kernels set, besides PATH and the backend's own.
const (
	// gomlxBackendEnv selects GoMLX's backend ("go", "xla:cpu", "xla:cuda" or "xla:/path/plugin.so").
	gomlxBackendEnv = "GOMLX_BACKEND"
	// noAutoInstallEnv stops go-xla from downloading plugins from GitHub at run time.
	noAutoInstallEnv = "GOMLX_NO_AUTO_INSTALL"
	// kernelEnv tells notebook code which cifarlab kernel runs it: "cpu" or "cuda".
	kernelEnv = "CIFARLAB_KERNEL"
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

// kernelArgv is a cifarlab kernelspec's argv: GoNB under the supervisor,
// REPO/.bin/cifarlab-kernel -- REPO/.bin/gonb --kernel {connection_file} --go_work=REPO.
func kernelArgv(repo Repo) []string {
	return []string{repo.Tool(supervisorName), "--", repo.Tool("gonb"), "--kernel", "{connection_file}", "--go_work=" + repo.Dir}
}

// newKernelSpec builds the kernel.json of one cifarlab kernel ("cpu" or "cuda"): the pinned
// gonb from REPO/.bin started with --go_work=REPO under the supervisor (kernelArgv), PATH = REPO/.bin, the go command's
// folder (go.mod's toolchain's bin/), then the server's PATH, the Go environment of goEnvPins
// with the cells' build flags (cellGoFlags) in its GOFLAGS, their module proxy (cellGoProxy with gt.CellPins,
// which pins go.mod's versions), GOTOOLCHAIN=go.mod's toolchain line, and the backend's
// variables.
func newKernelSpec(repo Repo, kind string, gt goTools, b backend) KernelSpec {
	display := cpuDisplayName
	if kind == "cuda" {
		display = cudaDisplayName
	}
	env := map[string]string{
		"PATH":           repo.binDir() + string(os.PathListSeparator) + gt.BinDir + string(os.PathListSeparator) + "${PATH}",
		gomlxBackendEnv:  b.GoMLX,
		noAutoInstallEnv: "1",
		kernelEnv:        kind,
		repoEnv:          repo.Dir,
	}
	// The Go environment of GoNB's builds (goEnvPins): GoNB's --go_work needs workspace mode (a
	// GOWORK=off inherited from the server would make the kernel die at start, "go: no go.work
	// file found"), and a user's GOFLAGS=-mod=mod would break every cell.
	for k, v := range goEnvPins() {
		env[k] = v
	}
	env["GOFLAGS"] = cellGoFlags(b)
	if proxy := cellGoProxy(gt); proxy != "" {
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
		Argv:          kernelArgv(repo),
		DisplayName:   display,
		Language:      "go",
		InterruptMode: "message",
		Env:           env,
		Metadata: SpecMetadata{Cifarlab: KernelInfo{
			Kernel: kind, Repo: repo.Dir, Backend: b.GoMLX, BackendReason: b.Reason,
		}},
	}
}
