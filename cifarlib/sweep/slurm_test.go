package sweep

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/internal/slurmtest"
	"github.com/stretchr/testify/require"
)

// TestSlurmSubmitAndQueue, on a real Slurm: sbatch refusing (an unknown partition) gives its
// own message and leaves no sweep.json; a submission with --array=...%1 runs one task while
// the others wait, and Status reads squeue --json's running task and pending bundle; without
// sbatch on PATH the error says so.
func TestSlurmSubmitAndQueue(t *testing.T) {
	cluster := slurmtest.Start(t)
	t.Setenv("SLURM_CONF", cluster.Conf)
	runs := t.TempDir()
	// A stand-in for cifarlab on the node: the tasks only have to stay in the queue.
	bin := filepath.Join(t.TempDir(), "sleeper")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755))
	s, err := Plan(spec(runs, "seed=1,2,3"))
	require.NoError(t, err)

	refused := &Slurm{Binary: bin, Flags: []string{"--partition=nosuch"}}
	_, err = refused.Submit(t.Context(), s, []int{0, 1, 2})
	var se *SlurmError
	require.ErrorAs(t, err, &se)
	require.Contains(t, se.Message, "sbatch: error: invalid partition specified: nosuch")
	_, err = Load(runs, "lr")
	require.ErrorIs(t, err, os.ErrNotExist, "a refused submission leaves no sweep.json")

	sl := &Slurm{Binary: bin, Flags: []string{"-c", "1"}, Parallel: 1}
	said, err := sl.Submit(t.Context(), s, []int{0, 1, 2})
	require.NoError(t, err)
	saved, err := Load(runs, "lr")
	require.NoError(t, err)
	id := saved.Submissions[0].JobID
	require.Equal(t, "submitted job array "+id+": tasks 0-2 of sweep lr (cifarlab sweep status --runs "+runs+" --name lr)", said)
	require.Equal(t, []int{0, 1, 2}, saved.Submissions[0].Tasks)

	var sts []TaskStatus
	require.Eventually(t, func() bool {
		sts, err = saved.Status(t.Context(), nil)
		require.NoError(t, err)
		return sts[0].State == "running"
	}, time.Minute, 50*time.Millisecond)
	require.Equal(t, []string{"running", "pending", "pending"}, []string{sts[0].State, sts[1].State, sts[2].State})
	require.Equal(t, []string{id + "_0", id + "_1", id + "_2"}, []string{sts[0].Job, sts[1].Job, sts[2].Job})
	toRun, err := saved.ToRun(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, toRun, "queued tasks are not submitted again")

	t.Setenv("PATH", t.TempDir())
	_, err = saved.ToRun(t.Context(), nil)
	require.ErrorContains(t, err, "the sweep has Slurm jobs and their tasks may still be queued; run this where squeue works")
	_, err = sl.Submit(t.Context(), s, []int{0})
	require.ErrorAs(t, err, &se)
	require.EqualError(t, err, `sweep: sbatch failed: exec: "sbatch": executable file not found in $PATH: `+
		`Slurm's commands are not on PATH: run on a login node of the cluster, or use --local to run the tasks here`)
	again, err := Load(runs, "lr")
	require.NoError(t, err)
	require.Len(t, again.Submissions, 1, "sweep.json is as before the failed submission")
}
