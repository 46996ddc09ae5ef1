package kernel

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// pinnedTool is one of the notebook tools pinned by the tool directives of tools/go.mod.
type pinnedTool struct {
	// Name is the binary name, e.g. "gonb".
	Name string
	// Package is the main package path, e.g. "golang.org/x/tools/cmd/goimports".
	Package string
	// Module is the module that provides Package, whose version tools/go.mod pins.
	Module string
}

// pinnedTools are the tools every kernel needs on its PATH: GoNB itself, goimports (GoNB
// adds missing imports with it) and gopls (completion and inspection).
var pinnedTools = []pinnedTool{
	{Name: "gonb", Package: "github.com/janpfeifer/gonb", Module: "github.com/janpfeifer/gonb"},
	{Name: "goimports", Package: "golang.org/x/tools/cmd/goimports", Module: "golang.org/x/tools"},
	{Name: "gopls", Package: "golang.org/x/tools/gopls", Module: "golang.org/x/tools/gopls"},
}

// toolStatus is the state of one pinned tool binary.
type toolStatus struct {
	pinnedTool
	// Path is where the binary is expected: REPO/.bin/Name.
	Path string
	// Want is the version tools/go.mod pins, Have the one the binary was built from
	// ("" when the binary is missing or unreadable).
	Want, Have string
	// WantGo is the Go release the tools must be built with (go.mod's toolchain line, "" for
	// any), HaveGo the one the binary was built with.
	WantGo, HaveGo string
	// Err says why the binary could not be read, if it could not.
	Err error
}

// OK reports whether the binary exists and was built from the pinned version.
func (s toolStatus) OK() bool {
	return s.Err == nil && s.Have != "" && s.Have == s.Want && (s.WantGo == "" || s.HaveGo == s.WantGo)
}

// String describes the status in one line.
func (s toolStatus) String() string {
	switch {
	case s.Err != nil:
		return fmt.Sprintf("%s: %v", s.Name, s.Err)
	case s.OK():
		return fmt.Sprintf("%s %s (%s, built with %s)", s.Name, s.Have, s.Path, s.HaveGo)
	case s.Have == s.Want:
		return fmt.Sprintf("%s %s at %s was built with %s, but the lab builds with %s (go.mod's toolchain line)", s.Name, s.Have, s.Path, s.HaveGo, s.WantGo)
	default:
		return fmt.Sprintf("%s %s at %s, but tools/go.mod pins %s", s.Name, s.Have, s.Path, s.Want)
	}
}

// toolPins is what the pinned tools must be built from: tools/go.mod's versions (require,
// by module) and go.mod's toolchain line (the Go release of every build, "" for any).
type toolPins struct {
	require   map[string]string
	toolchain string
}

// readToolPins reads repo's tool pins: tools/go.mod, with toolchain, go.mod's toolchain line
// (repoToolchain).
func readToolPins(repo Repo, toolchain string) (toolPins, error) {
	mod, err := readGoMod(repo.toolsModDir() + "/go.mod")
	if err != nil {
		return toolPins{}, fmt.Errorf("reading the tool pins: %w", err)
	}
	return toolPins{require: mod.Require, toolchain: toolchain}, nil
}

// checkTools compares the binaries in REPO/.bin with the versions pinned in tools/go.mod and
// the Go release of go.mod's toolchain line (toolPins.check).
func checkTools(repo Repo) ([]toolStatus, error) {
	pins, err := readToolPins(repo, repoToolchain(repo))
	if err != nil {
		return nil, err
	}
	return pins.check(repo), nil
}

// check compares the binaries in REPO/.bin with the pins, reading each binary's build
// information.
func (p toolPins) check(repo Repo) []toolStatus {
	out := make([]toolStatus, 0, len(pinnedTools))
	for _, t := range pinnedTools {
		st := toolStatus{pinnedTool: t, Path: repo.Tool(t.Name), Want: p.require[t.Module], WantGo: p.toolchain}
		if st.Want == "" {
			st.Err = fmt.Errorf("tools/go.mod has no require line for %s: add the tool with `go get -tool %s@VERSION` in tools/", t.Module, t.Package)
		} else if _, err := os.Stat(st.Path); err != nil {
			st.Err = fmt.Errorf("not built: %s is missing", st.Path)
		} else if info, err := buildinfo.ReadFile(st.Path); err != nil {
			st.Err = fmt.Errorf("cannot read the build information of %s: %w", st.Path, err)
		} else if info.Path != t.Package {
			st.Err = fmt.Errorf("%s is a build of %s, not of %s", st.Path, info.Path, t.Package)
		} else {
			st.Have, st.HaveGo = info.Main.Version, info.GoVersion
		}
		out = append(out, st)
	}
	return out
}

// toolchainEnv is the process's environment with GOTOOLCHAIN=toolchain (go.mod's toolchain line,
// when it has one): what the lab's builds run with (kernel/toolchain.sh).
func toolchainEnv(toolchain string) []string {
	env := os.Environ()
	if toolchain != "" {
		env = append(env, "GOTOOLCHAIN="+toolchain)
	}
	return env
}

// buildTools builds the pinned tools into REPO/.bin with `go install tool` run in tools/,
// so the versions come from tools/go.mod and never from @latest, with go.mod's toolchain (the Go
// that builds the cells builds gopls and goimports too). Output goes to log.
func buildTools(ctx context.Context, repo Repo, toolchain string, log io.Writer) error {
	cmd := exec.CommandContext(ctx, "go", "install", "tool")
	cmd.Dir = repo.toolsModDir()
	cmd.Env = append(toolchainEnv(toolchain), "GOBIN="+repo.binDir(), "GOWORK=off")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building gonb, goimports and gopls (cd %s && GOBIN=%s go install tool): %w", cmd.Dir, repo.binDir(), err)
	}
	return nil
}

// supervisorName is the binary, in REPO/.bin, that runs GoNB so that nothing the kernel
// started outlives it (cmd/cifarlab-kernel; Install builds it).
const supervisorName = "cifarlab-kernel"

// buildSupervisor builds cmd/cifarlab-kernel, which the kernelspecs run GoNB under, into
// REPO/.bin (go build skips what is up to date), with go.mod's toolchain.
func buildSupervisor(ctx context.Context, repo Repo, toolchain string, log io.Writer) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", repo.Tool(supervisorName), "./cmd/"+supervisorName)
	cmd.Dir = repo.Dir
	cmd.Env = append(toolchainEnv(toolchain), "GOWORK=off", "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the kernel supervisor (cd %s && go build -o %s ./cmd/%s): %w", repo.Dir, repo.Tool(supervisorName), supervisorName, err)
	}
	return nil
}

// ensureTools builds the pinned tools when any is missing or was built from another
// version than pins, and reports whether it built them.
func ensureTools(ctx context.Context, repo Repo, pins toolPins, log io.Writer) (built bool, err error) {
	var stale []string
	for _, st := range pins.check(repo) {
		if !st.OK() {
			stale = append(stale, st.String())
		}
	}
	if len(stale) == 0 {
		return false, nil
	}
	fmt.Fprintf(log, "building the pinned notebook tools (%s)\n", strings.Join(stale, "; "))
	if err := buildTools(ctx, repo, pins.toolchain, log); err != nil {
		return false, err
	}
	for _, st := range pins.check(repo) {
		if !st.OK() {
			return true, fmt.Errorf("after building: %s", st)
		}
	}
	return true, nil
}

// ensureBinaries makes REPO/.bin hold what the kernels run, built with toolchain (go.mod's
// toolchain line): the pinned tools (ensureTools) and the kernel supervisor (buildSupervisor).
// With skipTools it builds only the supervisor, when it is missing, and fails, with the command
// that builds them, when a pinned tool is missing. It reports whether it built the pinned tools.
func ensureBinaries(ctx context.Context, repo Repo, toolchain string, skipTools bool, log io.Writer) (built bool, err error) {
	var pins toolPins
	if !skipTools {
		if pins, err = readToolPins(repo, toolchain); err != nil {
			return false, err
		}
	}
	buildSupervisorToo, missing := !skipTools, ""
	if skipTools {
		buildSupervisorToo = !fileExists(repo.Tool(supervisorName))
		for _, t := range pinnedTools {
			if p := repo.Tool(t.Name); missing == "" && !fileExists(p) {
				missing = p
			}
		}
	}
	if !skipTools {
		if built, err = ensureTools(ctx, repo, pins, log); err != nil {
			return false, err
		}
	}
	if buildSupervisorToo {
		if err := buildSupervisor(ctx, repo, toolchain, log); err != nil {
			return false, err
		}
	}
	if missing != "" {
		return false, fmt.Errorf("%s is missing: build the pinned tools with `cd %s && GOBIN=%s go install tool` (or run kernel/setup.sh)",
			missing, repo.toolsModDir(), repo.binDir())
	}
	return built, nil
}
