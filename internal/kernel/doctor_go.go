package kernel

import (
	"cmp"
	"context"
	"fmt"
	"go/version"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// checkGo says which Go builds the cells: the go command on PATH run with GOTOOLCHAIN=go.mod's
// toolchain line, as the kernelspecs run it (findGoTools). It fails, with the fix, when there is
// no go command, when that toolchain cannot be had, or when the Go is older than go.mod's go line;
// it warns when the user's own GOTOOLCHAIN (exported, or the go command's default, e.g.
// GOTOOLCHAIN=local in GOROOT/go.env) would build with another Go in a terminal: the kernels pin
// their own, so notebooks are not affected.
func checkGo(ctx context.Context, repo Repo) Check {
	c := Check{Name: "go", Required: true}
	local, err := goVersion(ctx)
	if err != nil {
		c.Status, c.Detail = StatusFail, err.Error()
		c.Fix = "install Go (https://go.dev/dl: any Go 1.21+ fetches go.mod's toolchain itself) and put it on PATH, then bash kernel/setup.sh"
		return c
	}
	var mod *goMod
	if repo.Dir != "" {
		mod, _ = readGoMod(filepath.Join(repo.Dir, "go.mod"))
	}
	gt, err := findGoTools(ctx, repo)
	if err != nil {
		c.Status, c.Detail = StatusFail, err.Error()
		c.Fix = fmt.Sprintf("bash kernel/setup.sh (it fetches %s through the Go module proxy), or install Go %s from https://go.dev/dl and put it first on PATH",
			gt.Toolchain, strings.TrimPrefix(gt.Toolchain, "go"))
		return c
	}
	cells := cmp.Or(gt.Version, local)
	c.Detail = fmt.Sprintf("cells build with %s (%s", cells, gt.BinDir)
	if gt.Toolchain != "" {
		c.Detail += ", GOTOOLCHAIN=" + gt.Toolchain + " from go.mod's toolchain line"
	}
	c.Detail += ")"
	if cells != local {
		c.Detail += "; the go command on PATH is " + local
	}
	if mod != nil && mod.Go != "" {
		if version.Compare(cells, "go"+mod.Go) < 0 {
			c.Status = StatusFail
			c.Detail += fmt.Sprintf(", but go.mod needs go %s", mod.Go)
			c.Fix = fmt.Sprintf("add a toolchain line to go.mod (go mod edit -toolchain=go%s) and re-run bash kernel/setup.sh, or install Go %s or newer", mod.Go, mod.Go)
			return c
		}
		c.Detail += fmt.Sprintf(" (go.mod needs %s)", mod.Go)
	}
	c.Status = StatusOK
	if gt.Toolchain == "" {
		return c
	}
	return withUserToolchain(ctx, c, local, gt.Toolchain)
}

// withUserToolchain adds to the go check what the user's own GOTOOLCHAIN means next to the
// kernels' (toolchain, go.mod's toolchain line), local being the go command's own release.
func withUserToolchain(ctx context.Context, c Check, local, toolchain string) Check {
	// The user's own GOTOOLCHAIN: what `go build` in a terminal uses. Exported, it is reported
	// (the kernels replace it); it is a warning when a terminal's go build would run an older Go
	// than go.mod's toolchain: GOTOOLCHAIN=local (or +path) with an older go on PATH, or an older
	// release named exactly. goX+auto switches to the toolchain line by itself.
	user, source := os.Getenv("GOTOOLCHAIN"), "$GOTOOLCHAIN"
	if user == "" {
		source = "the go command's default (GOROOT/go.env or go env -w)"
		if out, err := exec.CommandContext(ctx, "go", "env", "GOTOOLCHAIN").Output(); err == nil {
			user = strings.TrimSpace(string(out))
		}
	}
	terminal := local
	if v, ok := strings.CutSuffix(user, "+path"); ok && strings.HasPrefix(v, "go") {
		terminal = v
	} else if strings.HasPrefix(user, "go") && !strings.HasSuffix(user, "+auto") {
		terminal = user
	}
	older := (user == "local" || user == "path" || strings.HasSuffix(user, "+path") || terminal == user) &&
		version.Compare(terminal, toolchain) < 0
	switch {
	case older:
		c.Status = StatusWarn
		c.Detail += fmt.Sprintf("; GOTOOLCHAIN=%s (%s) is not what the kernels use: they set GOTOOLCHAIN=%s, so notebooks build; "+
			"in a terminal, go build and go test here would run %s and fail", user, source, toolchain, terminal)
		c.Fix = fmt.Sprintf("nothing to do for the notebooks; in a terminal: export GOTOOLCHAIN=%s (as kernel/lab.sh and kernel/run-tests.sh do)", toolchain)
	case source == "$GOTOOLCHAIN" && user != toolchain:
		c.Detail += fmt.Sprintf("; your GOTOOLCHAIN=%s does not apply to the kernels: they set GOTOOLCHAIN=%s", user, toolchain)
	}
	return c
}
