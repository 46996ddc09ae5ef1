package kernel

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// goEnvFile points the go command at a fresh `go env -w` file holding content.
func goEnvFile(t *testing.T, content string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "env")
	require.NoError(t, os.WriteFile(f, []byte(content), 0o644))
	t.Setenv("GOENV", f)
	for _, name := range []string{"GOFLAGS", "GOWORK", "GO111MODULE", "CGO_ENABLED", "GOOS", "GOARCH"} {
		t.Setenv(name, "")
	}
}

func TestGoEnvPins(t *testing.T) {
	require.Equal(t, map[string]string{"GOFLAGS": "-buildvcs=false", "GOWORK": "", "GO111MODULE": "on", "CGO_ENABLED": "1",
		"GOOS": runtime.GOOS, "GOARCH": runtime.GOARCH}, goEnvPins())
}

// TestGoEnvOverrides asks the real go command: exported settings and `go env -w` settings that
// would change notebook builds are reported with where they come from; harmless ones are not.
func TestGoEnvOverrides(t *testing.T) {
	ctx := context.Background()
	goEnvFile(t, "GOFLAGS=-buildvcs=false\nGO111MODULE=auto\n")
	require.Empty(t, goEnvOverrides(ctx))
	require.Equal(t, Check{Name: "go environment", Status: StatusOK,
		Detail: "nothing for the kernels to override (they pin GOFLAGS, GOWORK, GO111MODULE, CGO_ENABLED, GOOS, GOARCH)"}, checkGoEnv(ctx))

	goEnvFile(t, "GOFLAGS=-tags=nosuchtag\nCGO_ENABLED=0\n")
	require.Equal(t, []goEnvOverride{
		{Name: "CGO_ENABLED", Value: "0", Pinned: "1", Source: "go env -w"},
		{Name: "GOFLAGS", Value: "-tags=nosuchtag", Pinned: "-buildvcs=false", Source: "go env -w"},
	}, goEnvOverrides(ctx))

	t.Setenv("GOFLAGS", "-mod=mod") // exported wins over go env -w, as for the go command
	t.Setenv("GOWORK", "off")
	t.Setenv("GO111MODULE", "off")
	c := checkGoEnv(ctx)
	require.Equal(t, Check{Name: "go environment", Status: StatusWarn,
		Detail: "the kernels override, for notebook cells: CGO_ENABLED=0 (go env -w) -> CGO_ENABLED=1; " +
			"GO111MODULE=off ($GO111MODULE) -> GO111MODULE=on; GOFLAGS=-mod=mod ($GOFLAGS) -> GOFLAGS=-buildvcs=false; " +
			"GOWORK=off ($GOWORK) -> GOWORK=",
		Fix: "nothing to do for the notebooks; in a terminal these settings still apply to go build and go test " +
			"(unset them, or `go env -u NAME` for go env -w)"}, c)

	// An unparsable $GOFLAGS makes go env fail: the exported values are still reported.
	t.Setenv("GOFLAGS", "notaflag")
	ovs := goEnvOverrides(ctx)
	require.Contains(t, ovs, goEnvOverride{Name: "GOFLAGS", Value: "notaflag", Pinned: "-buildvcs=false", Source: "$GOFLAGS"})
}
