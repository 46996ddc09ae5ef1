package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/sweep"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/internal/slurmtest"
	"github.com/stretchr/testify/require"
)

// TestSweepOnRealSlurm: a sweep of four tiny CPU runs as one job array on a real single-node
// Slurm with two fake GPUs. Each task gets its own CUDA_VISIBLE_DEVICES through gres; one task
// gets SIGUSR1 (what --signal=B:USR1@300 sends before the time limit) once it has a
// checkpoint, saves, requeues itself and resumes from that checkpoint; `cifarlab runs --json`
// then lists four done runs, and `sweep status` joins them with the queue.
func TestSweepOnRealSlurm(t *testing.T) {
	bin, root, runsDir := slurmSweepSetup(t)

	// Task 3 (from the list) trains long enough to be signalled after its first checkpoint.
	args := []string{"sweep", "--runs", runsDir, "--name", "s", "--grid", "seed=1,2,3", "--list", "seed=4 steps=150", "--slurm", "-c 1 --gres=gpu:1",
		"--binary", bin, "--data", root, "--model", "cnn", "--batch", "8", "--steps", "12", "--backend", "go", "--checkpoint-every", "4",
		"--log-every", "1", "--no-eval"}
	submitted := time.Now()
	stdout := runOK(t, bin, args...)
	require.Contains(t, stdout, "submitted job array ")
	s, err := sweep.Load(runsDir, "s")
	require.NoError(t, err)
	require.Len(t, s.Submissions, 1)
	job := s.Submissions[0].JobID
	require.Equal(t, []string{"s-seed_1", "s-seed_2", "s-seed_3", "s-seed_4-steps_150"}, taskNames(s))

	// Two tasks run at once (two GPUs); when they run, each has its GPU.
	require.Eventually(t, func() bool {
		sts, err := s.Status(t.Context(), nil)
		require.NoError(t, err)
		running := 0
		for _, st := range sts {
			if st.State == "running" {
				running++
			}
		}
		return running == 2
	}, time.Minute, 50*time.Millisecond)
	t.Logf("measured: sbatch to two tasks running (all the node holds): %.2fs", time.Since(submitted).Seconds())

	// SIGUSR1 to task 3 once it has a checkpoint: it saves, requeues itself and exits.
	dir3 := s.RunDir(3)
	require.Eventually(t, func() bool {
		m, _ := filepath.Glob(filepath.Join(dir3, "checkpoint-*-step-00000004.json"))
		return len(m) > 0
	}, 2*time.Minute, 20*time.Millisecond, "task 3 saved no checkpoint")
	signalled := time.Now()
	scancel := exec.Command("scancel", "--batch", "--signal=USR1", job+"_3")
	out, err := scancel.CombinedOutput()
	require.NoError(t, err, string(out))
	var stopped *runs.Record
	require.Eventually(t, func() bool {
		rec, err := runs.ReadRecord(dir3)
		if err == nil && rec.Status == runs.RunInterrupted {
			stopped = rec
			return true
		}
		return false
	}, time.Minute, 20*time.Millisecond, "task 3 did not save on SIGUSR1")
	stoppedAt := result(t, stopped).EndStep
	t.Logf("measured: SIGUSR1 to checkpoint saved: %.2fs (at step %d)", time.Since(signalled).Seconds(), stoppedAt)
	var resumedAt time.Time
	require.Eventually(t, func() bool {
		rec, err := runs.ReadRecord(dir3)
		if err == nil && rec.Status == runs.RunRunning && resumedAt.IsZero() {
			resumedAt = time.Now()
		}
		return err == nil && rec.Status == runs.RunDone
	}, 5*time.Minute, 50*time.Millisecond, "task 3 did not finish after its requeue")
	t.Logf("measured: checkpoint saved to training again after the requeue: %.2fs", resumedAt.Sub(signalled).Seconds())

	// All four done; the requeued one resumed from its checkpoint, not from scratch.
	require.Eventually(t, func() bool { return len(s.Unfinished()) == 0 }, 5*time.Minute, 100*time.Millisecond)
	t.Logf("measured: sbatch to all four done: %.2fs", time.Since(submitted).Seconds())
	gpus := map[string]bool{}
	for i := range s.Tasks {
		rec, err := runs.ReadRecord(s.RunDir(i))
		require.NoError(t, err)
		require.NotNil(t, rec.Job)
		require.Equal(t, job, rec.Job.ArrayJobID)
		require.Equal(t, i, rec.Job.TaskID)
		require.Contains(t, []string{"0", "1"}, rec.Job.GPUs, "task %d: CUDA_VISIBLE_DEVICES from gres", i)
		gpus[rec.Job.GPUs] = true
		require.Equal(t, s.Tasks[i].Params, rec.Settings.Given)
		res := result(t, rec)
		t.Logf("measured: task %d: wall time %.2fs, of which the steps (first-step compile included) %.2fs; %.1f steps/s",
			i, rec.WallTime.Seconds(), res.Duration.Seconds(), res.StepsPerSecond)
		if i == 3 {
			require.Equal(t, 1, rec.Job.Restarts, "SLURM_RESTART_COUNT after one requeue")
			require.True(t, res.Resumed)
			require.Equal(t, stoppedAt, res.StartStep, "resumed from the checkpoint saved on SIGUSR1")
			require.Equal(t, 150, res.EndStep)
		} else {
			require.Zero(t, rec.Job.Restarts)
			require.False(t, res.Resumed)
		}
	}
	require.Len(t, gpus, 2, "the two fake GPUs were both handed out")
	logText, err := os.ReadFile(filepath.Join(sweep.Dir(runsDir, "s"), "logs", "3.out"))
	require.NoError(t, err)
	require.Contains(t, string(logText), "SIGUSR1 (the time limit is near): checkpoint saved, requeueing")

	var listed []runs.Info
	require.NoError(t, json.Unmarshal([]byte(runOK(t, bin, "runs", "--runs", runsDir, "--json")), &listed))
	require.Len(t, listed, 4)
	for _, r := range listed {
		require.Equal(t, runs.RunDone, r.Status, r.Name)
	}
	status := runOK(t, bin, "sweep", "status", "--runs", runsDir, "--name", "s")
	require.Equal(t, 4, strings.Count(status, " done "), status)

	// Everything is done: resubmit submits nothing; a task run again exits at once.
	require.Contains(t, runOK(t, bin, "sweep", "resubmit", "--runs", runsDir, "--name", "s", "--slurm", "-c 1"), "all 4 tasks of sweep s are done")
	require.Contains(t, runOK(t, bin, "sweep", "task", "--runs", runsDir, "--name", "s", "--index", "1"), "done already")
}

// slurmSweepSetup starts a real Slurm (SLURM_CONF set for this test), builds the CLI, writes a
// small synthetic CIFAR-10 and returns them with a runs folder; the tasks train on the Go backend.
func slurmSweepSetup(t *testing.T) (bin, root, runsDir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the cifarlab binary and starts Slurm")
	}
	cluster := slurmtest.Start(t)
	t.Setenv("SLURM_CONF", cluster.Conf)
	t.Setenv("GOMLX_BACKEND", "go")
	return buildCLI(t), trainTestData(t, data.CIFAR10()), filepath.Join(t.TempDir(), "runs")
}

// runOK runs the cifarlab binary and returns its stdout; it fails the test on an error.
func runOK(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "cifarlab %s: %s", strings.Join(args, " "), stderr.String())
	return string(out)
}

// taskNames are the run folder names of the sweep's tasks, in task order.
func taskNames(s *sweep.Sweep) []string {
	var names []string
	for _, t := range s.Tasks {
		names = append(names, t.Name)
	}
	return names
}

// result decodes the training result a run record holds.
func result(t *testing.T, rec *runs.Record) *training.Result {
	t.Helper()
	var res training.Result
	require.NoError(t, json.Unmarshal(rec.Result, &res))
	return &res
}

// TestSweepScancelOnRealSlurm: scancel (SIGTERM) on a running Slurm task saves its checkpoint
// at the step it reached; its log says to resume with `sweep resubmit` and the sweep's sbatch
// flags (not "the same command", which would submit a new sweep), `sweep status` says
// interrupted with the same command, and that command resumes the task from the saved step.
func TestSweepScancelOnRealSlurm(t *testing.T) {
	bin, root, runsDir := slurmSweepSetup(t)
	const sbatchFlags = "-c 1 --gres=gpu:1"
	runOK(t, bin, "sweep", "--runs", runsDir, "--name", "sc", "--grid", "seed=1", "--slurm", sbatchFlags, "--binary", bin, "--data", root,
		"--model", "linear", "--batch", "8", "--steps", "100000", "--backend", "go", "--checkpoint-every", "100000", "--log-every", "1", "--no-eval")
	s, err := sweep.Load(runsDir, "sc")
	require.NoError(t, err)
	dir, logPath := s.RunDir(0), filepath.Join(sweep.Dir(runsDir, "sc"), "logs", "0.out")
	resubmit := "cifarlab sweep resubmit --runs " + runsDir + " --name sc --slurm \"" + sbatchFlags + "\""

	// scancelOnce waits until the task's log holds want, cancels the sweep's last job array
	// and returns the step its checkpoint saved.
	scancelOnce := func(want string) int {
		require.Eventually(t, func() bool {
			b, _ := os.ReadFile(logPath)
			rec, err := runs.ReadRecord(dir)
			return strings.Contains(string(b), want) && err == nil && rec.Status == runs.RunRunning
		}, 2*time.Minute, 20*time.Millisecond, "the task's log never said %q", want)
		s, err := sweep.Load(runsDir, "sc")
		require.NoError(t, err)
		out, err := exec.Command("scancel", s.Submissions[len(s.Submissions)-1].JobID).CombinedOutput()
		require.NoError(t, err, string(out))
		var rec *runs.Record
		require.Eventually(t, func() bool {
			rec, err = runs.ReadRecord(dir)
			return err == nil && rec.Status == runs.RunInterrupted
		}, time.Minute, 20*time.Millisecond, "the task did not save on scancel")
		return result(t, rec).EndStep
	}

	step := scancelOnce("step 5/100000")
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), fmt.Sprintf("cifarlab sweep: task 0 sc-seed_1: interrupted at step %d; checkpoint saved in %s: "+
			"resume it with `%s`\n", step, dir, resubmit))
	}, time.Minute, 20*time.Millisecond, "the task's message")
	require.Equal(t, []int{step}, checkpointSteps(t, dir))
	var sts []sweep.TaskStatus
	require.Eventually(t, func() bool { // the queue may say RUNNING a moment longer
		require.NoError(t, json.Unmarshal([]byte(runOK(t, bin, "sweep", "status", "--runs", runsDir, "--name", "sc", "--json")), &sts))
		return sts[0].State == "interrupted"
	}, 30*time.Second, 100*time.Millisecond, "sweep status: %+v", sts)
	require.Equal(t, fmt.Sprintf("checkpoint at step %d: resume with `%s`", step, resubmit), sts[0].Reason)

	// The command the message gives resumes the task from that step.
	require.Eventually(t, func() bool { // once the cancelled job has left the queue (COMPLETING)
		return strings.Contains(runOK(t, bin, "sweep", "resubmit", "--runs", runsDir, "--name", "sc", "--slurm", sbatchFlags), "submitted job array ")
	}, time.Minute, 200*time.Millisecond)
	scancelOnce(fmt.Sprintf("resumed from checkpoint %s at step %d of 100000", dir, step))
	rec, err := runs.ReadRecord(dir)
	require.NoError(t, err)
	res := result(t, rec)
	require.True(t, res.Resumed)
	require.Equal(t, step, res.StartStep)
}
