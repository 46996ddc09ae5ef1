package kernel

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Tool is one of the notebook tools pinned by the tool directives of tools/go.mod.
type Tool struct {
	// Name is the binary name, e.g. "gonb".
	Name string
	// Package is the main package path, e.g. "golang.org/x/tools/cmd/goimports".
	Package string
	// Module is the module that provides Package, whose version tools/go.mod pins.
	Module string
}

// PinnedTools are the tools every kernel needs on its PATH: GoNB itself, goimports (GoNB
// adds missing imports with it) and gopls (completion and inspection).
var PinnedTools = []Tool{
	{Name: "gonb", Package: "github.com/janpfeifer/gonb", Module: "github.com/janpfeifer/gonb"},
	{Name: "goimports", Package: "golang.org/x/tools/cmd/goimports", Module: "golang.org/x/tools"},
	{Name: "gopls", Package: "golang.org/x/tools/gopls", Module: "golang.org/x/tools/gopls"},
}

// ToolStatus is the state of one pinned tool binary.
type ToolStatus struct {
	Tool
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
func (s ToolStatus) OK() bool {
	return s.Err == nil && s.Have != "" && s.Have == s.Want && (s.WantGo == "" || s.HaveGo == s.WantGo)
}

// String describes the status in one line.
func (s ToolStatus) String() string {
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

// CheckTools compares the binaries in REPO/.bin with the versions pinned in tools/go.mod and
// the Go release of go.mod's toolchain line, reading each binary's build information.
func CheckTools(repo Repo) ([]ToolStatus, error) {
	toolchain := RepoToolchain(repo)
	mod, err := ReadGoMod(repo.ToolsModDir() + "/go.mod")
	if err != nil {
		return nil, fmt.Errorf("reading the tool pins: %w", err)
	}
	out := make([]ToolStatus, 0, len(PinnedTools))
	for _, t := range PinnedTools {
		st := ToolStatus{Tool: t, Path: repo.Tool(t.Name), Want: mod.Require[t.Module], WantGo: toolchain}
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
	return out, nil
}

// toolchainEnv is the process's environment with GOTOOLCHAIN=repo's go.mod toolchain line (when
// it has one): what the lab's builds run with (kernel/toolchain.sh).
func toolchainEnv(repo Repo) []string {
	env := os.Environ()
	if tc := RepoToolchain(repo); tc != "" {
		env = append(env, "GOTOOLCHAIN="+tc)
	}
	return env
}

// BuildTools builds the pinned tools into REPO/.bin with `go install tool` run in tools/,
// so the versions come from tools/go.mod and never from @latest, with go.mod's toolchain (the Go
// that builds the cells builds gopls and goimports too). Output goes to log.
func BuildTools(ctx context.Context, repo Repo, log io.Writer) error {
	cmd := exec.CommandContext(ctx, "go", "install", "tool")
	cmd.Dir = repo.ToolsModDir()
	cmd.Env = append(toolchainEnv(repo), "GOBIN="+repo.BinDir(), "GOWORK=off")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building gonb, goimports and gopls (cd %s && GOBIN=%s go install tool): %w", cmd.Dir, repo.BinDir(), err)
	}
	return nil
}

// BuildSupervisor builds cmd/cifarlab-kernel, which the kernelspecs run GoNB under, into
// REPO/.bin (go build skips what is up to date).
func BuildSupervisor(ctx context.Context, repo Repo, log io.Writer) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", repo.Tool(SupervisorName), "./cmd/"+SupervisorName)
	cmd.Dir = repo.Dir
	cmd.Env = append(toolchainEnv(repo), "GOWORK=off", "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the kernel supervisor (cd %s && go build -o %s ./cmd/%s): %w", repo.Dir, repo.Tool(SupervisorName), SupervisorName, err)
	}
	return nil
}

// EnsureTools builds the pinned tools when any is missing or was built from another
// version, and reports whether it built them.
func EnsureTools(ctx context.Context, repo Repo, log io.Writer) (built bool, err error) {
	sts, err := CheckTools(repo)
	if err != nil {
		return false, err
	}
	var stale []string
	for _, st := range sts {
		if !st.OK() {
			stale = append(stale, st.String())
		}
	}
	if len(stale) == 0 {
		return false, nil
	}
	fmt.Fprintf(log, "building the pinned notebook tools (%s)\n", strings.Join(stale, "; "))
	if err := BuildTools(ctx, repo, log); err != nil {
		return false, err
	}
	sts, err = CheckTools(repo)
	if err != nil {
		return true, err
	}
	for _, st := range sts {
		if !st.OK() {
			return true, fmt.Errorf("after building: %s", st)
		}
	}
	return true, nil
}

// GoBinDir returns the folder of the go command found on PATH, with symbolic links
// resolved, so kernels find the same toolchain whatever PATH the Jupyter server has.
func GoBinDir() (string, error) {
	p, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is not on PATH: install Go %s or newer (https://go.dev/dl, or the golang.org/toolchain module) and put its bin folder on PATH", "1.26")
	}
	if real, err := evalSymlinksAbs(p); err == nil {
		p = real
	}
	return dirOf(p), nil
}

// GoTools is the go command the kernels build cells with, as FindGoTools finds it.
type GoTools struct {
	// BinDir is the folder of that go command: the bin/ of the toolchain go.mod names (its GOROOT
	// when the go command on PATH switched to it), else the folder of the go command on PATH
	// (GoBinDir).
	BinDir string
	// ModCache and Proxy are its GOMODCACHE and GOPROXY (go env), "" when go env cannot say.
	ModCache, Proxy string
	// Version is its release, e.g. "go1.27.3" ("" when go env cannot say).
	Version string
	// Toolchain is the GOTOOLCHAIN the kernels set: the checkout's go.mod toolchain line, e.g.
	// "go1.27.3" ("" when go.mod has none or no checkout is known).
	Toolchain string
	// CellPins is the folder of the cells' pinned module proxy (CellPinsDir) that the kernels'
	// GOPROXY names first ("" for none): Install sets it to the one it wrote, doctor to the one an
	// installed kernelspec names (CellPinsOf).
	CellPins string
}

// Env returns the environment of a go command run as the kernels run it: the process's own with
// GOTOOLCHAIN=Toolchain (when set) and BinDir first on PATH.
func (gt GoTools) Env() []string {
	env := os.Environ()
	if gt.Toolchain != "" {
		env = append(env, "GOTOOLCHAIN="+gt.Toolchain)
	}
	if gt.BinDir != "" {
		env = append(env, "PATH="+gt.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	return env
}

// Go returns the go command of gt: BinDir/go, or "go" (found on PATH) when BinDir is empty.
func (gt GoTools) Go() string {
	if gt.BinDir == "" {
		return "go"
	}
	return filepath.Join(gt.BinDir, "go")
}

// RepoToolchain returns the toolchain line of repo's go.mod ("" when it has none or repo is zero).
func RepoToolchain(repo Repo) string {
	if repo.Dir == "" {
		return ""
	}
	mod, err := ReadGoMod(filepath.Join(repo.Dir, "go.mod"))
	if err != nil {
		return ""
	}
	return mod.Toolchain
}

// FindGoTools finds the go command the kernels of repo build cells with: the go command on PATH
// run with GOTOOLCHAIN=go.mod's toolchain line (RepoToolchain), which switches to that release
// (fetching it through the Go module proxy into the module cache, once, when it is not there),
// and asks it for its GOROOT, release, module cache and proxy list. The error says what is
// needed when no go command is on PATH or the toolchain cannot be had. A go env that fails for
// another reason (e.g. a broken GOFLAGS in `go env -w`'s file, which the kernels override)
// leaves ModCache, Proxy and Version empty.
func FindGoTools(ctx context.Context, repo Repo) (GoTools, error) {
	dir, err := GoBinDir()
	if err != nil {
		return GoTools{}, err
	}
	gt := GoTools{BinDir: dir, Toolchain: RepoToolchain(repo)}
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "go"), "env", "-json", "GOMODCACHE", "GOPROXY", "GOROOT", "GOVERSION")
	cmd.Dir = os.TempDir() // outside any module or workspace
	cmd.Env = append(gt.Env(), "GOFLAGS="+GoEnvPins()["GOFLAGS"])
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && gt.Toolchain != "" && strings.Contains(stderr.String(), gt.Toolchain) {
		local, _ := exec.CommandContext(ctx, filepath.Join(dir, "go"), "env", "GOVERSION").Output()
		return gt, fmt.Errorf("cells build with %s (go.mod's toolchain line), but the go command on PATH (%s, %s) could not switch to it: %s",
			gt.Toolchain, strings.TrimSpace(string(local)), dir, lastLine(stderr.String()))
	}
	if err == nil {
		var env struct{ GOMODCACHE, GOPROXY, GOROOT, GOVERSION string }
		if json.Unmarshal(out, &env) == nil {
			gt.ModCache, gt.Proxy, gt.Version = env.GOMODCACHE, env.GOPROXY, env.GOVERSION
			if env.GOROOT != "" && isExecutable(filepath.Join(env.GOROOT, "bin", "go")) {
				gt.BinDir = filepath.Join(env.GOROOT, "bin")
			}
		}
	}
	return gt, nil
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// GoVersion returns the version of the go command on PATH, e.g. "go1.26.8", as it runs in this
// process's environment (a GOTOOLCHAIN set there applies).
func GoVersion(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
