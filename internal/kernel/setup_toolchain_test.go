package kernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSetupNeedsTheToolchain runs kernel/setup.sh (in a copy of the checkout's scripts, whose
// go.mod names a toolchain that cannot be had: go1.27.99, with GOPROXY=off and an empty module
// cache, as on a machine without the Go proxy) and with no go command at all: it stops before
// installing anything (no venv, no .bin), with one line on stderr that says what it needs and why.
func TestSetupNeedsTheToolchain(t *testing.T) {
	repo := testRepo(t)
	goBin := filepath.Dir(mustGoBin(t))
	scratch := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(scratch, "kernel"), 0o755))
	for _, f := range []string{"setup.sh", "toolchain.sh"} {
		data, err := os.ReadFile(filepath.Join(repo.Dir, "kernel", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(scratch, "kernel", f), data, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(scratch, "go.mod"), []byte("module "+modulePath+"\n\ngo 1.27\n\ntoolchain go1.27.99\n"), 0o644))
	run := func(path string) (stdout, stderr string, err error) {
		cmd := exec.Command("bash", filepath.Join(scratch, "kernel", "setup.sh"))
		cmd.Env = []string{"PATH=" + path, "HOME=" + t.TempDir(), "SKIP_APT=1", "GOPROXY=off",
			"GOMODCACHE=" + t.TempDir(), "GOCACHE=" + t.TempDir(), "GOFLAGS=-modcacherw"}
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err = cmd.Run()
		return out.String(), errOut.String(), err
	}
	for _, tc := range []struct{ name, path, want string }{
		{"older go, no proxy", goBin + ":/usr/bin:/bin",
			"setup: needs Go 1.27.99 (go.mod's toolchain line: gomlx, go-xla and compute need Go 1.27), but the go command on PATH is go1.27.3 " +
				"and could not fetch go1.27.99 through GOPROXY=off ("},
		{"no go", "/usr/bin:/bin", "setup: needs Go 1.27.99 (go.mod's toolchain line): no go command on PATH."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.path == "/usr/bin:/bin" {
				if _, err := os.Stat("/usr/bin/go"); err == nil {
					t.Skip("/usr/bin has a go command")
				}
			}
			stdout, stderr, err := run(tc.path)
			require.Error(t, err)
			require.Equal(t, 1, err.(*exec.ExitError).ExitCode())
			require.Empty(t, stdout, "nothing ran before the check")
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			require.Len(t, lines, 1, "one line: %q", stderr)
			require.True(t, strings.HasPrefix(lines[0], tc.want), "%q", lines[0])
			for _, p := range []string{".venv", ".bin"} {
				require.NoDirExists(t, filepath.Join(scratch, p), "nothing is installed")
			}
		})
	}
}
