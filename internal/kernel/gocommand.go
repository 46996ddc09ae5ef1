package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// goBinDir returns the folder of the go command found on PATH, with symbolic links
// resolved, so kernels find the same toolchain whatever PATH the Jupyter server has.
func goBinDir() (string, error) {
	p, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is not on PATH: install Go %s or newer (https://go.dev/dl, or the golang.org/toolchain module) and put its bin folder on PATH", "1.26")
	}
	if real, err := evalSymlinksAbs(p); err == nil {
		p = real
	}
	return dirOf(p), nil
}

// goTools is the go command the kernels build cells with, as findGoTools finds it.
type goTools struct {
	// BinDir is the folder of that go command: the bin/ of the toolchain go.mod names (its GOROOT
	// when the go command on PATH switched to it), else the folder of the go command on PATH
	// (goBinDir).
	BinDir string
	// ModCache and Proxy are its GOMODCACHE and GOPROXY (go env), "" when go env cannot say.
	ModCache, Proxy string
	// Version is its release, e.g. "go1.27.3" ("" when go env cannot say).
	Version string
	// Toolchain is the GOTOOLCHAIN the kernels set: the checkout's go.mod toolchain line, e.g.
	// "go1.27.3" ("" when go.mod has none or no checkout is known).
	Toolchain string
	// CellPins is the folder of the cells' pinned module proxy (cellPinsDir) that the kernels'
	// GOPROXY names first ("" for none): Install sets it to the one it wrote, doctor to the one an
	// installed kernelspec names (cellPinsOf).
	CellPins string
}

// Env returns the environment of a go command run as the kernels run it: the process's own with
// GOTOOLCHAIN=Toolchain (when set) and BinDir first on PATH.
func (gt goTools) Env() []string {
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
func (gt goTools) Go() string {
	if gt.BinDir == "" {
		return "go"
	}
	return filepath.Join(gt.BinDir, "go")
}

// findGoTools finds the go command the kernels of repo build cells with: the go command on PATH
// run with GOTOOLCHAIN=go.mod's toolchain line (repoToolchain), which switches to that release
// (fetching it through the Go module proxy into the module cache, once, when it is not there),
// and asks it for its GOROOT, release, module cache and proxy list. The error says what is
// needed when no go command is on PATH or the toolchain cannot be had. A go env that fails for
// another reason (e.g. a broken GOFLAGS in `go env -w`'s file, which the kernels override)
// leaves ModCache, Proxy and Version empty.
func findGoTools(ctx context.Context, repo Repo) (goTools, error) {
	dir, err := goBinDir()
	if err != nil {
		return goTools{}, err
	}
	gt := goTools{BinDir: dir, Toolchain: repoToolchain(repo)}
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "go"), "env", "-json", "GOMODCACHE", "GOPROXY", "GOROOT", "GOVERSION")
	cmd.Dir = os.TempDir() // outside any module or workspace
	cmd.Env = append(gt.Env(), "GOFLAGS="+goEnvPins()["GOFLAGS"])
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

// goVersion returns the version of the go command on PATH, e.g. "go1.26.8", as it runs in this
// process's environment (a GOTOOLCHAIN set there applies).
func goVersion(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
