package oomkill_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/cifarlab/cifarlab/internal/oomkill"
	"github.com/cifarlab/cifarlab/internal/oomkill/oomtest"
	"github.com/stretchr/testify/require"
)

// helperEnv makes the test binary a helper: "cgroup DIR" moves itself into the cgroup DIR and
// reports Check for three children (an allocator over the limit, a kill -9, an exit 3);
// "alloc" allocates and touches 1 GiB.
const helperEnv = "OOMKILL_TEST_HELPER"

type helperReport struct {
	OOM, Kill9, Exit *oomkill.Kill
	OOMErr           string
	Dirs             []string
	Known            bool
}

// TestHelper is the helper process of TestCheckOutOfMemory; without helperEnv it does nothing.
func TestHelper(t *testing.T) {
	mode, dir, _ := strings.Cut(os.Getenv(helperEnv), " ")
	switch mode {
	case "alloc":
		os.Exit(oomtest.Allocate(1<<30) % 2) // 0: it did not run out
	case "cgroup":
		require.NoError(t, oomtest.Enter(dir))
		var r helperReport
		r.Dirs = oomkill.Dirs()
		before := oomkill.Take()
		r.Known = before.Known()
		alloc := exec.Command(os.Args[0], "-test.run=^TestHelper$")
		alloc.Env = append(os.Environ(), helperEnv+"=alloc")
		err := alloc.Run()
		r.OOM = oomkill.Check(before, err)
		if err != nil {
			r.OOMErr = err.Error()
		}

		before = oomkill.Take()
		sleep := exec.Command("sleep", "60")
		require.NoError(t, sleep.Start())
		require.NoError(t, sleep.Process.Signal(syscall.SIGKILL))
		r.Kill9 = oomkill.Check(before, sleep.Wait())

		before = oomkill.Take()
		r.Exit = oomkill.Check(before, exec.Command("sh", "-c", "exit 3").Run())
		b, err := json.Marshal(r)
		require.NoError(t, err)
		os.Stdout.Write(append([]byte("REPORT "), b...))
	}
}

// TestCheckOutOfMemory runs a real out-of-memory kill: a memory cgroup of its own under the
// test's (96 MiB), a helper process inside it, and there a child that touches 1 GiB. Check names
// the cgroup and its limit for that child, and nothing for a child killed with SIGKILL by hand or
// one that exits 3. Needs a writable memory cgroup (root on cgroup v1, or a delegated v2 one).
func TestCheckOutOfMemory(t *testing.T) {
	const want = 96 << 20
	dir := oomtest.Cgroup(t, want)
	helper := exec.Command(os.Args[0], "-test.run=^TestHelper$", "-test.v")
	helper.Env = append(os.Environ(), helperEnv+"=cgroup "+dir)
	out, err := helper.CombinedOutput()
	require.NoError(t, err, "helper: %s", out)
	_, js, ok := strings.Cut(string(out), "REPORT ")
	require.True(t, ok, "helper: %s", out)
	var r helperReport
	require.NoError(t, json.NewDecoder(strings.NewReader(js)).Decode(&r), "helper: %s", out)

	require.NotEmpty(t, r.Dirs)
	require.Equal(t, dir, r.Dirs[0], "the helper's innermost memory cgroup")
	require.True(t, r.Known)
	require.NotNil(t, r.OOM, "the allocator ended with %q, and Check found no out-of-memory kill", r.OOMErr)
	require.Equal(t, "signal: killed", r.OOMErr)
	require.Equal(t, &oomkill.Kill{Cgroup: dir, Kills: 1, Limit: want}, r.OOM)
	require.Equal(t, "96 MiB", r.OOM.LimitText())
	require.Nil(t, r.Kill9, "kill -9 is not memory running out")
	require.Nil(t, r.Exit, "exit 3 is not memory running out")
}
