package training

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/stretchr/testify/require"
)

// run.json records where the run ran: under Slurm the job, array job, task and restart count
// from Slurm's variables, and the GPUs; outside Slurm a resume counts as a restart.
func TestRunRecordJob(t *testing.T) {
	runsDir := t.TempDir()
	host, err := os.Hostname()
	require.NoError(t, err)
	for k, v := range map[string]string{"SLURM_JOB_ID": "42", "SLURM_ARRAY_JOB_ID": "40", "SLURM_ARRAY_TASK_ID": "2",
		"SLURM_RESTART_COUNT": "3", "CUDA_VISIBLE_DEVICES": "1"} {
		t.Setenv(k, v)
	}
	_, err = trainRun(t, runsDir, "slurm", func(c *testRun) { c.Record.Params = map[string]string{"seed": "1"} })
	require.NoError(t, err)
	rec, err := runs.ReadRecord(filepath.Join(runsDir, "slurm"))
	require.NoError(t, err)
	require.Equal(t, &runs.JobInfo{Host: host, GPUs: "1", JobID: "42", ArrayJobID: "40", TaskID: 2, Restarts: 3}, rec.Job)
	require.Equal(t, map[string]string{"seed": "1"}, rec.Settings.Given)

	for _, k := range []string{"SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_RESTART_COUNT", "CUDA_VISIBLE_DEVICES"} {
		require.NoError(t, os.Unsetenv(k)) // t.Setenv above restores them
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop := func(c *testRun) {
		c.OnPoint = func(p runs.HistoryPoint) error {
			if p.Step == 2 {
				cancel()
			}
			return nil
		}
	}
	_, err = trainRunCtx(ctx, t, runsDir, "local", stop)
	require.NoError(t, err)
	rec, err = runs.ReadRecord(filepath.Join(runsDir, "local"))
	require.NoError(t, err)
	require.Equal(t, &runs.JobInfo{Host: host, TaskID: -1}, rec.Job)
	_, err = trainRun(t, runsDir, "local", nil) // the resume
	require.NoError(t, err)
	rec, err = runs.ReadRecord(filepath.Join(runsDir, "local"))
	require.NoError(t, err)
	require.Equal(t, runs.RunDone, rec.Status)
	require.Equal(t, &runs.JobInfo{Host: host, TaskID: -1, Restarts: 1}, rec.Job)
}
