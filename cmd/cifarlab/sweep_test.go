package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

// localSweepSetup builds the CLI, writes a small synthetic CIFAR-10 and returns them with a
// runs folder; the tasks train on the Go backend and see gpus as CUDA_VISIBLE_DEVICES.
func localSweepSetup(t *testing.T, gpus string) (bin, root, runsDir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the cifarlab binary")
	}
	t.Setenv("GOMLX_BACKEND", "go")
	t.Setenv("CUDA_VISIBLE_DEVICES", gpus)
	return buildCLI(t), trainTestData(t, data.CIFAR10()), filepath.Join(t.TempDir(), "runs")
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
	noData, emptyLayout := t.TempDir(), t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(emptyLayout, "cifar-10-batches-bin"), 0o755))
	looked := func(dir string) string {
		return "cifarlab sweep: sweep: task sweep-seed_1 is refused by `cifarlab train`: --data " + dir + " holds no cifar10 data (looked for " +
			filepath.Join(dir, "cifar-10-batches-bin", "data_batch_1.bin") + ", " + filepath.Join(dir, "cifar-10-batches-py", "data_batch_1") + ", " +
			filepath.Join(dir, "synthetic", "cifar-10-batches-bin", "data_batch_1.bin") + ", " +
			filepath.Join(dir, "synthetic", "cifar-10-batches-py", "data_batch_1") + "): give --data the folder that holds " +
			"cifar-10-batches-bin/ or cifar-10-batches-py/, or get the data with `cifarlab download --dataset cifar10 --data " + dir + "`"
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--grid", "learning-rate=0.1", "--steps", "5"},
			"cifarlab sweep: sweep: --grid learning-rate names \"learning-rate\", which is not a setting of `cifarlab train`: use one of augment, augmentation, backbone-lr, "},
		{"empty grid", []string{"--steps", "5"},
			"cifarlab sweep: sweep: the sweep has no grid and no list, so no task: give at least one --grid FLAG=V1,V2 (or --list 'FLAG=V ...')\n"},
		{"unknown shared flag", []string{"--grid", "seed=1", "--step", "5"},
			"cifarlab sweep: unknown flag --step: not a flag of `cifarlab sweep` or of `cifarlab train` (see cifarlab sweep -h, cifarlab train -h)\n"},
		{"train refuses", []string{"--grid", "seed=1", "--model", "vgg", "--steps", "5"},
			"cifarlab sweep: sweep: the shared flags are refused by `cifarlab train`: unknown --model \"vgg\": use one of linear, cnn, resnet18, resnet20, airbench94: fix the flags\n"},
		{"train refuses a task", []string{"--grid", "label-smoothing=0,1", "--steps", "5"},
			"cifarlab sweep: sweep: --grid label-smoothing has a value the setting does not take: --label-smoothing 1: use a number in [0, 1): " +
				"fix the value\n"},
		{"no data", []string{"--grid", "seed=1", "--steps", "5", "--data", noData}, looked(noData)},
		{"empty data folder", []string{"--grid", "seed=1", "--steps", "5", "--data", emptyLayout}, looked(emptyLayout)},
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
// grid under the same name is refused.
func TestSweepLocal(t *testing.T) {
	bin, root, runsDir := localSweepSetup(t, "3,5")
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
}

// Ctrl-C on a local sweep, as a terminal sends it (SIGINT to the whole foreground process
// group), ends like a training Ctrl-C: the running task saves its checkpoint at the step it
// logged last, its run.json says interrupted, the task not started stays so, the sweep says
// how to resume and exits 130. Running the same command resumes from that step; SIGTERM to
// the sweep alone stops it the same way.
func TestSweepLocalCtrlC(t *testing.T) {
	bin, root, runsDir := localSweepSetup(t, "") // no GPU: one task at a time
	// No periodic checkpoint: the only one is the one saved on the interrupt.
	args := []string{"sweep", "--runs", runsDir, "--name", "cc", "--grid", "seed=1,2", "--data", root, "--model", "linear", "--batch", "8",
		"--steps", "100000", "--backend", "go", "--no-eval", "--checkpoint-every", "100000", "--log-every", "1"}
	logPath := filepath.Join(sweep.Dir(runsDir, "cc"), "logs", "0.out")
	dir := filepath.Join(runsDir, "cc-seed_1")

	// start starts the sweep in a process group of its own, as a shell starts a job, and waits
	// until the task's log holds want.
	start := func(want string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(bin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		require.Eventually(t, func() bool {
			b, _ := os.ReadFile(logPath)
			return strings.Contains(string(b), want)
		}, 2*time.Minute, 20*time.Millisecond, "the task's log never said %q", want)
		return cmd, &out
	}
	exitCode := func(cmd *exec.Cmd) int {
		var ee *exec.ExitError
		require.ErrorAs(t, cmd.Wait(), &ee)
		return ee.ExitCode()
	}

	cmd, out := start("step 5/100000")
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)) // the terminal's Ctrl-C
	require.Equal(t, 130, exitCode(cmd), out.String())

	rec, err := runs.ReadRecord(dir)
	require.NoError(t, err)
	require.Equal(t, runs.RunInterrupted, rec.Status)
	step := result(t, rec).EndStep
	logText, err := os.ReadFile(logPath)
	require.NoError(t, err)
	lastLogged := 0
	for _, m := range regexp.MustCompile(`(?m)^step (\d+)/100000:`).FindAllStringSubmatch(string(logText), -1) {
		lastLogged, _ = strconv.Atoi(m[1])
	}
	require.GreaterOrEqual(t, lastLogged, 5)
	require.Equal(t, lastLogged, step, "the checkpoint is at the step the log reached")
	require.Equal(t, []int{step}, checkpointSteps(t, dir))
	require.Contains(t, string(logText), fmt.Sprintf("task 0 cc-seed_1: interrupted at step %d; checkpoint saved in %s: "+
		"the sweep resumes it when run again (the same `cifarlab sweep` command)", step, dir))
	require.Contains(t, out.String(), "task 0 cc-seed_1: interrupted after ")
	require.Contains(t, out.String(), fmt.Sprintf(": checkpoint saved at step %d\n", step))
	require.Contains(t, out.String(), fmt.Sprintf("cifarlab sweep: sweep: cc interrupted (task 0 saved its checkpoint at step %d; "+
		"not started: task 1): run the same `cifarlab sweep` command again to resume (or `cifarlab sweep resubmit --runs %s --name cc --local`)\n",
		step, runsDir))
	require.NotContains(t, out.String(), "exit status")
	require.NoDirExists(t, filepath.Join(runsDir, "cc-seed_2"), "the task not started stays so")
	status := runOK(t, bin, "sweep", "status", "--runs", runsDir, "--name", "cc")
	require.Regexp(t, `(?m)^0 +cc-seed_1 +interrupted `, status)
	require.Regexp(t, `(?m)^1 +cc-seed_2 +not started `, status)

	// The same command resumes from that step; SIGTERM to the sweep alone stops it again.
	cmd, out = start(fmt.Sprintf("step %d/100000:", step+3)) // a step the first run never reached
	logText, err = os.ReadFile(logPath)
	require.NoError(t, err)
	require.Contains(t, string(logText), fmt.Sprintf("resumed from checkpoint %s at step %d of 100000", dir, step))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 130, exitCode(cmd), out.String())
	rec, err = runs.ReadRecord(dir)
	require.NoError(t, err)
	require.Equal(t, runs.RunInterrupted, rec.Status)
	res := result(t, rec)
	require.True(t, res.Resumed)
	require.Equal(t, step, res.StartStep)
	require.Greater(t, res.EndStep, step)
}

// checkpointSteps are the steps of the checkpoints in a run folder, in order.
func checkpointSteps(t *testing.T, dir string) []int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "checkpoint-*-step-*.json"))
	require.NoError(t, err)
	var steps []int
	for _, f := range files {
		m := regexp.MustCompile(`-step-(\d+)\.json$`).FindStringSubmatch(f)
		require.NotNil(t, m, f)
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		steps = append(steps, n)
	}
	slices.Sort(steps)
	return steps
}

// A task that fails at once (its data file is empty, which the sweep's check of --data cannot
// see) shows as failed with its error in `sweep status`, as in `sweep status --json`.
func TestSweepStatusFailedTask(t *testing.T) {
	bin, root, runsDir := localSweepSetup(t, "")
	path := filepath.Join(root, "cifar-10-batches-bin", "data_batch_1.bin")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	cmd := exec.Command(bin, "sweep", "--runs", runsDir, "--name", "f", "--grid", "seed=1,2", "--data", root, "--model", "linear",
		"--steps", "4", "--backend", "go")
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	// The error's text after its package's prefix.
	why := path + ": at byte offset 0: no records: the file is empty; re-download or regenerate it"
	require.Regexp(t, `task 0 f-seed_1: exit status 1: [a-z]+: `+regexp.QuoteMeta(why)+` after `, string(out))

	var sts []sweep.TaskStatus
	require.NoError(t, json.Unmarshal([]byte(runOK(t, bin, "sweep", "status", "--runs", runsDir, "--name", "f", "--json")), &sts))
	status := runOK(t, bin, "sweep", "status", "--runs", runsDir, "--name", "f")
	require.Len(t, sts, 2)
	for _, st := range sts {
		require.Equal(t, "failed", st.State)
		require.Regexp(t, `^[a-z]+: `+regexp.QuoteMeta(why)+`$`, st.Reason)
		require.Regexp(t, fmt.Sprintf(`(?m)^%d +%s +failed +- +0 +- +%s$`, st.Index, st.Name, regexp.QuoteMeta(st.Reason)), status)
	}
}
