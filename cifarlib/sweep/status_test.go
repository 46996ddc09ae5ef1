package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/stretchr/testify/require"
)

// A task's state joins its run folder, Slurm's queue and its log: the run folder wins, a task
// that failed before its run folder said anything is failed (not "not started"), with the
// error its log ends with.
func TestTaskState(t *testing.T) {
	done := runs.Info{Status: runs.RunDone}
	interrupted := runs.Info{Status: runs.RunInterrupted, Reason: "interrupted at step 7 of 10"}
	failed := runs.Info{Status: runs.RunFailed, Reason: "training: the loss is NaN"}
	incomplete := runs.Info{Status: runs.RunIncomplete, Reason: "started and not finished"}
	none := runs.Info{Status: runs.RunBroken}
	const logErr = "data: the file is empty"
	for _, tc := range []struct {
		name          string
		run           runs.Info
		queue         string
		started       bool
		logErr        string
		state, reason string
	}{
		{"done whatever the queue says", done, "FAILED", true, logErr, "done", ""},
		{"running in Slurm", none, "RUNNING", false, "", "running", ""},
		{"completing in Slurm", incomplete, "COMPLETING", true, "", "running", ""},
		{"pending in Slurm", none, "PENDING", false, "", "pending", ""},
		{"requeued in Slurm", interrupted, "REQUEUED", true, "", "requeued", ""},
		{"interrupted, its job completing", interrupted, "COMPLETING", true, "", "interrupted", "interrupted at step 7 of 10"},
		{"interrupted, cancelled by scancel", interrupted, "CANCELLED", true, "", "interrupted", "interrupted at step 7 of 10"},
		{"failed run", failed, "", true, "", "failed", "training: the loss is NaN"},
		{"failed in Slurm before its run folder", none, "FAILED", false, logErr, "failed", logErr},
		{"failed in Slurm, no log", none, "FAILED", false, "", "failed", "Slurm says FAILED (see the task's log)"},
		{"timed out in Slurm", incomplete, "TIMEOUT", true, "", "timeout", "Slurm says TIMEOUT (see the task's log)"},
		{"failed here before its run folder", none, "", false, logErr, "failed", logErr},
		{"not started", none, "", false, "", "not started", ""},
		{"a foreign folder of the same name", runs.Info{Status: runs.RunForeign}, "", true, "", "not started", ""},
		{"killed", incomplete, "", true, "", "killed", "started and not finished"},
		{"completed in Slurm, run not done", incomplete, "COMPLETED", true, "", "killed", "started and not finished"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, reason := taskState(tc.run, tc.queue, tc.started, tc.logErr)
			require.Equal(t, tc.state, state)
			require.Equal(t, tc.reason, reason)
		})
	}
}

// taskError is the last line the failed `cifarlab sweep task` printed, without its prefix.
func TestTaskError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.out")
	require.Empty(t, taskError(path), "no log")
	require.NoError(t, os.WriteFile(path, []byte("step 1/5: loss 2.3\n"), 0o644))
	require.Empty(t, taskError(path), "no error in the log")
	log := "cifarlab sweep: first attempt failed\nresumed from checkpoint\ncifarlab sweep: data: the file is empty\n"
	require.NoError(t, os.WriteFile(path, []byte(log), 0o644))
	require.Equal(t, "data: the file is empty", taskError(path))
}

// The status table writes test accuracy in percent, as the runs table does, and each task's
// reason.
func TestWriteStatus(t *testing.T) {
	var b strings.Builder
	require.NoError(t, WriteStatus(&b, []TaskStatus{
		{Index: 0, Name: "s-seed_1", State: "done", Job: "12_0", Run: runs.Info{Steps: 100, HasTest: true, TestAccuracy: 0.487}},
		{Index: 1, Name: "s-seed_2", State: "failed", Reason: "data: the file is empty"},
		{Index: 2, Name: "s-seed_3", State: "not started"},
	}))
	require.Equal(t, "task  name      state        job   steps  test acc  reason\n"+
		"0     s-seed_1  done         12_0  100    48.70%\n"+
		"1     s-seed_2  failed       -     0      -         data: the file is empty\n"+
		"2     s-seed_3  not started  -     0      -\n", b.String())
}
