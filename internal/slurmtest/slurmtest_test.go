package slurmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClusterRunsJobsOnFakeGPUs: the cluster starts, runs a two-task job array with one fake
// GPU each (each task sees its own CUDA_VISIBLE_DEVICES), and stops.
func TestClusterRunsJobsOnFakeGPUs(t *testing.T) {
	c := Start(t)
	out := t.TempDir()
	script := filepath.Join(out, "job.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho \"$CUDA_VISIBLE_DEVICES\" > "+out+"/task-$SLURM_ARRAY_TASK_ID\nsleep 2\n"), 0o755))
	cmd := exec.Command("sbatch", "--parsable", "--array=0-1", "--gres=gpu:1", "-c", "1", "-o", "/dev/null", script)
	cmd.Env = c.Env()
	id, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", id)
	got := map[string]bool{}
	require.Eventually(t, func() bool {
		for i := range 2 {
			data, err := os.ReadFile(filepath.Join(out, "task-"+string(rune('0'+i))))
			if err != nil {
				return false
			}
			got[strings.TrimSpace(string(data))] = true
		}
		return true
	}, time.Minute, 100*time.Millisecond, "job %s did not run", id)
	require.Equal(t, map[string]bool{"0": true, "1": true}, got, "both tasks ran at once, each on its own GPU")
}
