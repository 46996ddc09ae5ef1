package main

import (
	"os/exec"
	"regexp"
	"testing"

	"github.com/cifarlab/cifarlab/internal/oomkill"
	"github.com/cifarlab/cifarlab/internal/oomkill/oomtest"
	"github.com/stretchr/testify/require"
)

// A local sweep in a memory cgroup of 200 MiB (a container's limit), whose task trains a
// ResNet-18 on batches of 256 images: the kernel's out-of-memory killer ends the task, and the
// sweep's line for it says that memory ran out, the limit, and what to do, not only
// "signal: killed".
func TestSweepLocalOutOfMemory(t *testing.T) {
	bin, root, runsDir := localSweepSetup(t, "")
	dir := oomtest.Cgroup(t, 200<<20)
	cmd := exec.Command("sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, dir, bin,
		"sweep", "--runs", runsDir, "--name", "oom", "--grid", "seed=1", "--data", root, "--model", "resnet18",
		"--batch", "256", "--steps", "2", "--backend", "go", "--no-eval")
	out, err := cmd.CombinedOutput()
	t.Logf("cifarlab sweep in a cgroup of 200 MiB:\n%s", out)
	require.Error(t, err)
	require.Regexp(t, `task 0 oom-seed_1: killed because `+regexp.QuoteMeta("memory ran out (limit 200 MiB, memory cgroup "+dir+
		": 1 out-of-memory kill)")+` after [0-9.]+s \(log: .*\); to go on, `+regexp.QuoteMeta(oomkill.Advice), string(out))
	require.Contains(t, string(out), "sweep: task 0 oom-seed_1: signal: killed: killed because memory ran out (limit 200 MiB")
}
