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
	// Err says why the binary could not be read, if it could not.
	Err error
}

// OK reports whether the binary exists and was built from the pinned version.
func (s ToolStatus) OK() bool { return s.Err == nil && s.Have != "" && s.Have == s.Want }

// String describes the status in one line.
func (s ToolStatus) String() string {
	switch {
	case s.Err != nil:
		return fmt.Sprintf("%s: %v", s.Name, s.Err)
	case s.OK():
		return fmt.Sprintf("%s %s (%s)", s.Name, s.Have, s.Path)
	default:
		return fmt.Sprintf("%s %s at %s, but tools/go.mod pins %s", s.Name, s.Have, s.Path, s.Want)
	}
}

// CheckTools compares the binaries in REPO/.bin with the versions pinned in tools/go.mod,
// reading the module versions recorded in each binary's build information.
func CheckTools(repo Repo) ([]ToolStatus, error) {
	mod, err := ReadGoMod(repo.ToolsModDir() + "/go.mod")
	if err != nil {
		return nil, fmt.Errorf("reading the tool pins: %w", err)
	}
	out := make([]ToolStatus, 0, len(PinnedTools))
	for _, t := range PinnedTools {
		st := ToolStatus{Tool: t, Path: repo.Tool(t.Name), Want: mod.Require[t.Module]}
		if st.Want == "" {
			st.Err = fmt.Errorf("tools/go.mod has no require line for %s: add the tool with `go get -tool %s@VERSION` in tools/", t.Module, t.Package)
		} else if _, err := os.Stat(st.Path); err != nil {
			st.Err = fmt.Errorf("not built: %s is missing", st.Path)
		} else if info, err := buildinfo.ReadFile(st.Path); err != nil {
			st.Err = fmt.Errorf("cannot read the build information of %s: %w", st.Path, err)
		} else if info.Path != t.Package {
			st.Err = fmt.Errorf("%s is a build of %s, not of %s", st.Path, info.Path, t.Package)
		} else {
			st.Have = info.Main.Version
		}
		out = append(out, st)
	}
	return out, nil
}

// BuildTools builds the pinned tools into REPO/.bin with `go install tool` run in tools/,
// so the versions come from tools/go.mod and never from @latest. Output goes to log.
func BuildTools(ctx context.Context, repo Repo, log io.Writer) error {
	cmd := exec.CommandContext(ctx, "go", "install", "tool")
	cmd.Dir = repo.ToolsModDir()
	cmd.Env = append(os.Environ(), "GOBIN="+repo.BinDir(), "GOWORK=off")
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
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
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
	// BinDir is the folder of the go command on PATH (GoBinDir).
	BinDir string
	// ModCache and Proxy are its GOMODCACHE and GOPROXY (go env), "" when go env cannot say.
	ModCache, Proxy string
}

// FindGoTools finds the go command on PATH and asks it for its module cache and proxy list.
// A go env that fails (e.g. on a broken GOFLAGS in `go env -w`'s file, which the kernels
// override) leaves ModCache and Proxy empty.
func FindGoTools(ctx context.Context) (GoTools, error) {
	dir, err := GoBinDir()
	if err != nil {
		return GoTools{}, err
	}
	gt := GoTools{BinDir: dir}
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "go"), "env", "-json", "GOMODCACHE", "GOPROXY")
	cmd.Dir = os.TempDir() // outside any module or workspace
	cmd.Env = append(os.Environ(), "GOFLAGS="+GoEnvPins()["GOFLAGS"])
	if out, err := cmd.Output(); err == nil {
		var env struct{ GOMODCACHE, GOPROXY string }
		if json.Unmarshal(out, &env) == nil {
			gt.ModCache, gt.Proxy = env.GOMODCACHE, env.GOPROXY
		}
	}
	return gt, nil
}

// GoVersion returns the version of the go command on PATH, e.g. "go1.26.8".
func GoVersion(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
