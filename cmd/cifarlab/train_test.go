package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"

	"github.com/stretchr/testify/require"
)

// trainTestData writes small synthetic datasets for the train/eval command tests.
func trainTestData(t *testing.T, spec data.Spec) string {
	t.Helper()
	t.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	root := t.TempDir()
	require.NoError(t, data.Synthesize(root, spec, data.SynthOptions{Seed: 2, TrainSize: 256, TestSize: 100}))
	return root
}

// The seed's bug through the CLI: a 10-class head on CIFAR-100 stops before the first step
// with the static guard's message, a non-zero exit, and no checkpoint written.
func TestTrainCommandHeadMismatchStops(t *testing.T) {
	root := trainTestData(t, data.CIFAR100(data.LabelsFine))
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	var stdout, stderr bytes.Buffer
	code := run([]string{"train", "--dataset", "cifar100", "--data", root, "--model", "cnn", "--head", "10", "--steps", "5",
		"--backend", "go", "--checkpoint", ckpt}, &stdout, &stderr)
	require.Equal(t, 1, code)
	require.Equal(t, "cifarlab train: model head has 10 outputs but dataset cifar100 has 100 classes (--head 10): "+
		"drop --head, so that the head is sized from --dataset (100 outputs)\n", stderr.String(), "a CLI user is told about flags")
	require.Empty(t, stdout.String())
	_, err := os.Stat(ckpt)
	require.True(t, errors.Is(err, os.ErrNotExist))
}

// With --guard=false the same bug trains, and the summary says what fraction of the training
// examples contributed exactly zero loss.
func TestTrainCommandUnguardedReportsZeroLoss(t *testing.T) {
	spec := data.CIFAR100(data.LabelsFine)
	root := trainTestData(t, spec)
	args := []string{"train", "--dataset", "cifar100", "--data", root, "--model", "linear", "--head", "10", "--guard=false",
		"--steps", "4", "--batch", "16", "--seed", "9", "--backend", "go"}

	// Expected: labels >= 10 in the first 4 batches of the training order.
	recs, err := data.LoadSplit(root, spec, data.SplitTrain)
	require.NoError(t, err)
	ds, err := data.NewDataset("expected", recs, data.DatasetOptions{BatchSize: 16, Shuffle: true, Seed: 9, DropRemainder: true})
	require.NoError(t, err)
	bad := 0
	for hb, err := range ds.HostBatches() {
		require.NoError(t, err)
		for _, l := range hb.Labels {
			if l >= 10 {
				bad++
			}
		}
		if hb.Number == 3 {
			break
		}
	}

	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(append(args, "--json"), &stdout, &stderr), stderr.String())
	var res training.Result
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res))
	require.False(t, res.Guarded)
	require.Equal(t, int64(64), res.ZeroLoss.Seen)
	require.Equal(t, int64(bad), res.ZeroLoss.OutOfRange)
	require.Equal(t, 10, res.ZeroLoss.HeadWidth)
	require.Equal(t, 256, res.ZeroLoss.SplitExamples)
	require.NotNil(t, res.Timeline, "--json carries the run's timeline")
	require.Equal(t, 1, res.Timeline.Programs(runs.ProgramTrainStep))

	stdout.Reset()
	require.Equal(t, 0, run(args, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "zero-loss examples: "+res.ZeroLoss.String()+"\n")
	require.Contains(t, stdout.String(), "\ntimeline: start ")
	require.Contains(t, stdout.String(), "WARNING: ")
}

// train with a checkpoint, resume it to more steps, and evaluate it with cifarlab eval.
func TestTrainResumeAndEvalCommands(t *testing.T) {
	root := trainTestData(t, data.CIFAR10())
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	train := func(steps string) training.Result {
		var stdout, stderr bytes.Buffer
		code := run([]string{"train", "--dataset", "cifar10", "--data", root, "--model", "linear", "--steps", steps,
			"--batch", "16", "--backend", "go", "--checkpoint", ckpt, "--json"}, &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
		var res training.Result
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &res))
		return res
	}
	first := train("3")
	require.False(t, first.Resumed)
	require.Equal(t, 0, first.StartStep)
	require.Equal(t, 3, first.EndStep)
	second := train("5")
	require.True(t, second.Resumed)
	require.Equal(t, 3, second.StartStep)
	require.Equal(t, 5, second.EndStep)
	require.NotNil(t, second.Eval)

	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"eval", "--checkpoint", ckpt, "--data", root, "--backend", "go", "--json"}, &stdout, &stderr), stderr.String())
	var ev struct {
		Checkpoint training.CheckpointInfo `json:"checkpoint"`
		training.EvalResult
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &ev))
	require.Equal(t, 5, ev.Checkpoint.Step)
	require.Equal(t, "linear", ev.Checkpoint.Model.Arch)
	require.Equal(t, second.Eval.Accuracy, ev.Accuracy)
	require.Equal(t, second.Eval.Loss, ev.Loss)
	require.Equal(t, second.Eval.PerClass, ev.PerClass)
	require.Equal(t, 100, ev.Examples)

	stdout.Reset()
	require.Equal(t, 0, run([]string{"eval", "--checkpoint", ckpt, "--data", root, "--backend", "go", "--split", "train", "--max", "50"}, &stdout, &stderr), stderr.String())
	lines := strings.Split(stdout.String(), "\n")
	require.Equal(t, "checkpoint "+ckpt+": linear for cifar10 (10 classes), step 5, precision f32", lines[0])
	require.True(t, strings.HasPrefix(lines[1], "train accuracy "), lines[1])
	require.True(t, strings.HasSuffix(lines[1], "/50), loss "+lines[1][strings.LastIndex(lines[1], "loss ")+5:]), lines[1])
	require.Equal(t, "label  class                           correct examples  accuracy", lines[2])
	require.True(t, strings.HasPrefix(lines[3], "    0  airplane "), lines[3])
	require.Len(t, lines, 3+10+1)
}

func TestTrainAndEvalCommandErrors(t *testing.T) {
	t.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"train", "--dataset", "cifar10"}, 2, "cifarlab train: --steps or --epochs is required: the global step to train to (e.g. --steps 1000), or the epochs (e.g. --epochs 10)\n"},
		{[]string{"train", "--dataset", "svhn", "--steps", "3"}, 2, "cifarlab train: data: unknown dataset \"svhn\": use \"cifar10\" or \"cifar100\"\n"},
		{[]string{"train", "--steps", "3", "--optimizer", "lion", "--backend", "go"}, 2,
			"cifarlab train: --optimizer lion: use one of adam, adamw, adamax, rmsprop, sgd, nesterov\n"},
		{[]string{"train", "--steps", "3", "--progress", "maybe"}, 2, "cifarlab train: --progress \"maybe\": use auto, on or off\n"},
		{[]string{"train", "--steps", "3", "--model", "vgg"}, 2, "cifarlab train: unknown --model \"vgg\": use one of linear, cnn, resnet18, resnet20, airbench94\n"},
		{[]string{"eval"}, 2, "cifarlab eval: --checkpoint is required: the checkpoint folder of a run of cifarlab train\n"},
		// Only the flag given is named.
		{[]string{"train", "--epochs", "-1"}, 2, "cifarlab train: --epochs -1: use a number > 0\n"},
		{[]string{"train", "--steps", "-3"}, 2, "cifarlab train: --steps -3: use a whole number > 0\n"},
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, c.code, run(c.args, &stdout, &stderr), "%v", c.args)
		require.Equal(t, c.msg, stderr.String(), "%v", c.args)
	}

	empty := t.TempDir()
	var stdout, stderr bytes.Buffer
	require.Equal(t, 1, run([]string{"eval", "--checkpoint", empty, "--backend", "go"}, &stdout, &stderr))
	require.Equal(t, "cifarlab eval: checkpoints: no checkpoint in "+empty+": train a run with it as its checkpoint folder first "+
		"(Checkpoint.Dir, the setting checkpoint)\n", stderr.String())

	stderr.Reset()
	require.Equal(t, 1, run([]string{"train", "--data", empty, "--steps", "2", "--backend", "go"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "is missing: run `cifarlab download --dataset cifar10")

	// A flag out of range is refused before anything is loaded: no data line before the refusal
	// (the recipe's epochs and whitening-bias epochs make the run read the data to size itself).
	root := trainTestData(t, data.CIFAR10())
	// --data naming the dataset's folder itself: the folder that holds it is named.
	nested := filepath.Join(root, data.CIFAR10().Dir)
	stderr.Reset()
	require.Equal(t, 1, run([]string{"train", "--data", nested, "--steps", "2", "--backend", "go"}, &stdout, &stderr))
	require.Equal(t, "cifarlab train: data: "+nested+" is the cifar10 folder itself (its files are there, in the binary layout), "+
		"not the folder that holds cifar-10-batches-bin/: use the data folder "+root+" (or set CIFARLAB_DATA="+root+")\n", stderr.String())
	for _, tta := range []string{"5", "-2"} {
		stdout.Reset()
		stderr.Reset()
		var code int
		logged := captureStderr(t, func() {
			code = run([]string{"train", "--recipe", "airbench94", "--data", root, "--backend", "go", "--batch", "64", "--tta", tta}, &stdout, &stderr)
		})
		require.Equal(t, 2, code)
		require.Equal(t, "cifarlab train: --tta "+tta+": use 0 (none), 1 (mirror) or 2 (mirror and translate)\n", stderr.String())
		require.Empty(t, stdout.String())
		require.Empty(t, logged, "the run's log (its data line) before the refusal")
	}
}

// captureStderr returns what f writes to os.Stderr (train's log goes there).
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	saved := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() { os.Stderr = saved }()
	f()
	os.Stderr = saved
	require.NoError(t, w.Close())
	return <-done
}

// A real SIGINT to the built binary: training stops after the current step, saves its
// checkpoint, prints the result and exits with status 130; the same command resumes from
// the saved step.
func TestTrainCommandSIGINTSavesAndResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the cifarlab binary")
	}
	root := trainTestData(t, data.CIFAR10())
	bin := filepath.Join(t.TempDir(), "cifarlab")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	args := []string{"train", "--dataset", "cifar10", "--data", root, "--model", "linear", "--batch", "8", "--backend", "go",
		"--checkpoint", ckpt, "--json", "--log-every", "1", "--no-eval"}

	cmd := exec.Command(bin, append(args, "--steps", "1000000")...)
	cmd.Env = append(os.Environ(), "GOMLX_NO_AUTO_INSTALL=1")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderrPipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stderrPipe)
	var stderrText strings.Builder
	for lines.Scan() {
		stderrText.WriteString(lines.Text() + "\n")
		if strings.HasPrefix(lines.Text(), "step 3/1000000: ") {
			break
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() {
		for lines.Scan() {
			stderrText.WriteString(lines.Text() + "\n")
		}
		done <- cmd.Wait()
	}()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("cifarlab train did not exit after SIGINT; stderr:\n%s", stderrText.String())
	}
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, stderrText.String())
	require.Equal(t, 130, exitErr.ExitCode(), stderrText.String())

	var res training.Result
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), stdout.String())
	require.True(t, res.Interrupted)
	require.GreaterOrEqual(t, res.EndStep, 3)
	require.Less(t, res.EndStep, 1000000)
	require.Contains(t, stderrText.String(), "interrupted: checkpoint saved at step ")
	// What the run did, from its first second, as a notebook cell says it.
	require.Regexp(t, `(?s)^creating the backend… 0\.\d s\nloading the data… 0\.\d s\n.*\ncompiling the train step \(first time for this shape\)… \d+\.\d s\n`+
		`compiled the train step \(first time for this shape\) in \d+\.\d\d s\n.*\nstep 1/1000000 running… \d+\.\d s\nstep 1/1000000: loss`, stderrText.String())
	// The compiles' durations are the timeline's.
	for _, e := range res.Timeline.Events {
		if e.Phase == runs.PhaseCompile && e.Program == runs.ProgramTrainStep {
			require.Contains(t, stderrText.String(), fmt.Sprintf("\ncompiled the train step (first time for this shape) in %.2f s\n", e.Duration.Seconds()))
		}
	}
	require.True(t, strings.HasSuffix(stderrText.String(), "cifarlab train: interrupted at step "+strconv.Itoa(res.EndStep)+
		" of 1000000; checkpoint saved in "+ckpt+": run the same command to resume\n"), stderrText.String())
	saved, err := filepath.Glob(filepath.Join(ckpt, fmt.Sprintf("checkpoint-*-step-%08d.json", res.EndStep)))
	require.NoError(t, err)
	require.Len(t, saved, 1)

	// Resume two more steps.
	resume := exec.Command(bin, append(args, "--steps", strconv.Itoa(res.EndStep+2))...)
	resume.Env = cmd.Env
	out, err = resume.Output()
	require.NoError(t, err)
	var res2 training.Result
	require.NoError(t, json.Unmarshal(out, &res2))
	require.True(t, res2.Resumed)
	require.False(t, res2.Interrupted)
	require.Equal(t, res.EndStep, res2.StartStep)
	require.Equal(t, res.EndStep+2, res2.EndStep)

	// An evaluation says what it does too, with its progress.
	eval := exec.Command(bin, "eval", "--checkpoint", ckpt, "--data", root, "--backend", "go", "--tta", "2", "--batch", "40")
	eval.Env = cmd.Env
	var evalErr bytes.Buffer
	eval.Stderr = &evalErr
	out, err = eval.Output()
	require.NoError(t, err, evalErr.String())
	require.Contains(t, string(out), "test accuracy ")
	require.Regexp(t, `^creating the backend… 0\.\d s\nloading the data… 0\.\d s\nevaluating 100 images with TTA level 2 \(6 views\)… 0/100 · 0\.\d s\n`+
		`compiling the evaluation with TTA level 2 \(first time for this shape\)… \d+\.\d s\n`+
		`compiled the evaluation with TTA level 2 \(first time for this shape\) in (\d+\.\d\d) s\n`+
		`evaluating 100 images with TTA level 2 \(6 views\)… 40/100 · \d+\.\d s\n`+
		`evaluated 100 images with TTA level 2 \(6 views\) in \d+\.\d\d s\nprograms: compile evaluation \(eval, TTA level 2\) (\d+\.\d\d) s\n$`, evalErr.String())
}
