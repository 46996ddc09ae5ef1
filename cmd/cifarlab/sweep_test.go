package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/sweep"
	"github.com/stretchr/testify/require"
)

// buildCLI builds the cifarlab binary into a temporary folder.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cifarlab")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

// --dry-run prints the tasks with their train flags and the sbatch command, and submits
// nothing: no sweep.json.
func TestSweepDryRun(t *testing.T) {
	runsDir := filepath.Join(t.TempDir(), "runs")
	var stdout, stderr bytes.Buffer
	code := run([]string{"sweep", "--runs", runsDir, "--name", "lr", "--grid", "seed=1,2", "--model", "resnet20", "--grid", "lr=0.1,0.05",
		"--steps", "2000", "--augment", "--slurm", "--partition=gpu --time=4:00:00 --gres=gpu:1", "--parallel", "2",
		"--binary", "/opt/cifarlab/bin/cifarlab", "--dry-run"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	abs, err := filepath.Abs(runsDir)
	require.NoError(t, err)
	dir := filepath.Join(abs, ".sweeps", "lr")
	want := ""
	for i, st := range []string{"seed=1-lr=0.1", "seed=1-lr=0.05", "seed=2-lr=0.1", "seed=2-lr=0.05"} {
		seed, lr, _ := strings.Cut(st, "-")
		name := "lr-" + strings.ReplaceAll(st, "=", "_")
		want += "task " + string(rune('0'+i)) + "  " + name + "  --model resnet20 --steps 2000 --augment --" + seed + " --" + lr +
			" --checkpoint " + filepath.Join(runsDir, name) + " --progress off\n"
	}
	want += "sbatch --parsable --array=0-3%2 --requeue --signal=B:USR1@300 --job-name=lr --open-mode=append --output=" +
		filepath.Join(dir, "logs", "%a.out") + " --partition=gpu --time=4:00:00 --gres=gpu:1 " + filepath.Join(dir, "job.sh") + "\n" +
		"job script:\n#!/bin/sh\n# cifarlab sweep lr: task $SLURM_ARRAY_TASK_ID of " + filepath.Join(dir, "sweep.json") + "\n" +
		"exec '/opt/cifarlab/bin/cifarlab' sweep task --runs '" + abs + "' --name 'lr'\n"
	require.Equal(t, want, stdout.String())
	require.NoFileExists(t, filepath.Join(dir, "sweep.json"))
}

// Bad input is refused with what, where and the fix, before anything is written or submitted.
func TestSweepCommandErrors(t *testing.T) {
	runsDir := t.TempDir()
	file := filepath.Join(runsDir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--grid", "learning-rate=0.1", "--steps", "5"},
			"cifarlab sweep: sweep: --grid learning-rate names --learning-rate, which is not a flag of `cifarlab train`: use one of augment, backbone-lr, "},
		{"empty grid", []string{"--steps", "5"},
			"cifarlab sweep: sweep: the sweep has no grid and no list, so no task: give at least one --grid FLAG=V1,V2 (or --list 'FLAG=V ...')\n"},
		{"unknown shared flag", []string{"--grid", "seed=1", "--step", "5"},
			"cifarlab sweep: unknown flag --step: not a flag of `cifarlab sweep` or of `cifarlab train` (see cifarlab sweep -h, cifarlab train -h)\n"},
		{"train refuses", []string{"--grid", "seed=1", "--model", "vgg", "--steps", "5"},
			"cifarlab sweep: sweep: task sweep-seed_1 is refused by `cifarlab train`: unknown --model \"vgg\": use one of linear, cnn, resnet18, resnet20: fix the flags\n"},
		{"both executors", []string{"--grid", "seed=1", "--steps", "5", "--local", "--slurm", "-p gpu"},
			"cifarlab sweep: --local and --slurm: choose one executor\n"},
		{"runs not writable", []string{"--runs", filepath.Join(file, "runs"), "--grid", "seed=1", "--steps", "5"},
			"cifarlab sweep: sweep: the runs folder \"" + filepath.Join(file, "runs") + "\" cannot be written: mkdir " + file + ": not a directory: " +
				"give --runs a folder you can write, on a filesystem every node mounts\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"sweep", "--runs", runsDir}, tc.args...)
			var stdout, stderr bytes.Buffer
			require.Equal(t, 2, run(args, &stdout, &stderr))
			require.True(t, strings.HasPrefix(stderr.String(), tc.want), stderr.String())
			require.Empty(t, stdout.String())
		})
	}
	_, err := os.Stat(filepath.Join(runsDir, ".sweeps"))
	require.True(t, errors.Is(err, os.ErrNotExist), "nothing written")
}

// The local executor runs the tasks here, one per GPU at a time (CUDA_VISIBLE_DEVICES lists
// them), each recording its GPU; running the same sweep again finds them done, and another
// grid under the same name is refused. A task's SIGTERM saves its checkpoint and exits 130.
func TestSweepLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the cifarlab binary")
	}
	bin := buildCLI(t)
	root := trainTestData(t, data.CIFAR10())
	runsDir := filepath.Join(t.TempDir(), "runs")
	t.Setenv("GOMLX_BACKEND", "go")
	t.Setenv("CUDA_VISIBLE_DEVICES", "3,5")
	args := []string{"sweep", "--runs", runsDir, "--name", "loc", "--grid", "seed=1,2,3", "--data", root, "--model", "linear",
		"--batch", "8", "--steps", "4", "--backend", "go", "--no-eval"}
	out := runOK(t, bin, args...)
	require.Contains(t, out, "sweep loc: 3 tasks done")
	s, err := sweep.Load(runsDir, "loc")
	require.NoError(t, err)
	require.Equal(t, "local", s.Submissions[0].Executor)
	for i := range s.Tasks {
		rec, err := runs.ReadRecord(s.RunDir(i))
		require.NoError(t, err)
		require.Equal(t, runs.RunDone, rec.Status)
		require.Contains(t, []string{"3", "5"}, rec.Job.GPUs)
		require.Equal(t, -1, rec.Job.TaskID)
	}
	require.Contains(t, runOK(t, bin, args...), "all 3 tasks of sweep loc are done")

	cmd := exec.Command(bin, append(append(args[:5:5], "--grid", "seed=1,2"), args[7:]...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.Error(t, cmd.Run())
	require.Contains(t, stderr.String(), `the name "loc" is already used in `+runsDir+" by another sweep")

	// SIGTERM to the sweep: it passes it to its running task, which saves its checkpoint and
	// exits; the sweep says how to resume.
	long := exec.Command(bin, "sweep", "--runs", runsDir, "--name", "long", "--grid", "seed=1", "--data", root, "--model", "linear", "--batch", "8",
		"--steps", "100000", "--backend", "go", "--no-eval", "--checkpoint-every", "2")
	var longOut bytes.Buffer
	long.Stdout, long.Stderr = &longOut, &longOut
	require.NoError(t, long.Start())
	dir := filepath.Join(runsDir, "long-seed_1")
	require.Eventually(t, func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "checkpoint-*.json"))
		return len(m) > 0
	}, time.Minute, 20*time.Millisecond)
	require.NoError(t, long.Process.Signal(syscall.SIGTERM))
	require.Error(t, long.Wait())
	require.Contains(t, longOut.String(), "sweep long: stopped (context canceled): run the same sweep again to resume the unfinished tasks")
	rec, err := runs.ReadRecord(dir)
	require.NoError(t, err)
	require.Equal(t, runs.RunInterrupted, rec.Status)
	require.Positive(t, result(t, rec).EndStep)
	logText, err := os.ReadFile(filepath.Join(sweep.Dir(runsDir, "long"), "logs", "0.out"))
	require.NoError(t, err)
	require.Contains(t, string(logText), "checkpoint saved in "+dir+": run the same command to resume")
}
