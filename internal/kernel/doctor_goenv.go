package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

// goEnvOverride is a Go setting of the user's that the kernels replace.
type goEnvOverride struct {
	// Name, Value and Pinned: the variable, the user's value and the kernels' value.
	Name, Value, Pinned string
	// Source is "$NAME" (exported) or "go env -w" (the go command's configuration file).
	Source string
}

// harmless reports whether the user's value of name builds cells as the pin does.
func harmless(name, value string) bool {
	if name == "GO111MODULE" && value == "auto" {
		return true
	}
	return value == "" || value == goEnvPins()[name]
}

// goEnvOverrides lists the user's Go settings (exported, or in `go env -w`'s file as
// `go env -json` reports them) that differ from goEnvPins in a way that matters, sorted by name.
// It runs the go command on PATH; when that fails (e.g. on an unparsable $GOFLAGS) it falls
// back to the exported variables.
func goEnvOverrides(ctx context.Context) []goEnvOverride {
	pins := goEnvPins()
	names := make([]string, 0, len(pins))
	for n := range pins {
		if n != "GOWORK" { // go env GOWORK prints the go.work in use, not the setting
			names = append(names, n)
		}
	}
	sort.Strings(names)
	effective := map[string]string{}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"env", "-json"}, names...)...)
	cmd.Dir = os.TempDir() // outside any module or workspace
	if out, err := cmd.Output(); err == nil {
		_ = json.Unmarshal(out, &effective)
	}
	var overrides []goEnvOverride
	for _, name := range append(names, "GOWORK") {
		value, source := os.Getenv(name), "$"+name
		if value == "" {
			value, source = effective[name], "go env -w"
		}
		if name == "CGO_ENABLED" && value == "" {
			continue
		}
		if !harmless(name, value) {
			overrides = append(overrides, goEnvOverride{Name: name, Value: value, Pinned: pins[name], Source: source})
		}
	}
	sort.Slice(overrides, func(i, j int) bool { return overrides[i].Name < overrides[j].Name })
	return overrides
}

// checkGoEnv reports the user's Go settings that the kernels override, as a warning: notebook
// cells build with goEnvPins whatever they are, but `go build` in a terminal does not.
func checkGoEnv(ctx context.Context) Check {
	c := Check{Name: "go environment", Status: StatusOK,
		Detail: "nothing for the kernels to override (they pin GOFLAGS, GOWORK, GO111MODULE, CGO_ENABLED, GOOS, GOARCH)"}
	ovs := goEnvOverrides(ctx)
	if len(ovs) == 0 {
		return c
	}
	var parts []string
	for _, o := range ovs {
		parts = append(parts, fmt.Sprintf("%s=%s (%s) -> %s=%s", o.Name, o.Value, o.Source, o.Name, o.Pinned))
	}
	c.Status = StatusWarn
	c.Detail = "the kernels override, for notebook cells: " + strings.Join(parts, "; ")
	c.Fix = "nothing to do for the notebooks; in a terminal these settings still apply to go build and go test " +
		"(unset them, or `go env -u NAME` for go env -w)"
	return c
}
