package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/cifarlab/cifarlab/internal/oomkill/oomtest"
	"github.com/stretchr/testify/require"
)

// allocEnv makes this test binary a kernel that runs out of memory (TestMain).
const allocEnv = "CIFARLAB_KERNEL_TEST_ALLOC"

func TestMain(m *testing.M) {
	if os.Getenv(allocEnv) != "" {
		os.Exit(oomtest.Allocate(1<<30) % 2)
	}
	os.Exit(m.Run())
}

// A kernel that the out-of-memory killer ends (in a memory cgroup of 128 MiB): cifarlab-kernel
// exits as it did, 128+9, and its log says that memory ran out, the limit and what to do.
func TestKernelOutOfMemory(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "cifarlab-kernel")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	dir := oomtest.Cgroup(t, 128<<20)
	cmd := exec.Command("sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, dir, bin, "--", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), allocEnv+"=1")
	out, err = cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	require.Equal(t, 128+9, exit.ExitCode(), "%s", out)
	require.Regexp(t, `cifarlab-kernel: the kernel \(pid \d+\) was killed because `+
		regexp.QuoteMeta("memory ran out (limit 128 MiB, memory cgroup "+dir+": 1 out-of-memory kill); to go on, use less memory"), string(out))
}
