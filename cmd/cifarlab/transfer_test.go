package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"

	"github.com/stretchr/testify/require"
)

// The story's move through the CLI: a CIFAR-10 run, its checklist against CIFAR-100 (exit 1, the
// transfer as the fix), resuming it on CIFAR-100 refused with the size-mismatch message, then
// train --from (the model taken from the run) whose summary and --json say it was transferred
// and from what, a resume of the transferred run, its eval, and a linear probe.
func TestTransferCommands(t *testing.T) {
	root := trainTestData(t, data.CIFAR10())
	require.NoError(t, data.Synthesize(root, data.CIFAR100(data.LabelsFine), data.SynthOptions{Seed: 3, TrainSize: 256, TestSize: 100}))
	src := filepath.Join(t.TempDir(), "c10")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"train", "--dataset", "cifar10", "--data", root, "--model", "cnn", "--steps", "2", "--batch", "16",
		"--backend", "go", "--checkpoint", src, "--no-eval", "--progress", "off"}, &stdout, &stderr), stderr.String())

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 1, run([]string{"diagnose", "--from", src, "--dataset", "cifar100", "--data", root}, &stdout, &stderr))
	out := stdout.String()
	require.Contains(t, out, "Dataset switch checklist for run "+src+" (trained on cifar10):\n")
	require.Contains(t, out, "  [FAIL] head width    the run's head has 10 outputs, cifar100 has 100 classes\n")
	require.Contains(t, out, "  [OK  ] metrics       cifar100 is evaluated with top-1 and top-5 accuracy")
	require.Contains(t, out, "Fix: transfer the run (training.Settings.Transfer.From; the settings from="+src+" dataset=cifar100)")

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 1, run([]string{"train", "--dataset", "cifar100", "--data", root, "--model", "cnn", "--steps", "4", "--batch", "16",
		"--backend", "go", "--checkpoint", src}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "cifarlab train: checkpoints: resuming "+src+": size mismatch for /cnn/head/dense/weights: copying "+
		"a variable with shape [1024 10] from checkpoint (trained for cifar10, head of 10), the shape in the current model is [1024 100] "+
		"(built for cifar100, head of 100)")

	dst := filepath.Join(t.TempDir(), "c100")
	transfer := func(steps string, extra ...string) training.Result {
		var stdout, stderr bytes.Buffer
		args := append([]string{"train", "--from", src, "--dataset", "cifar100", "--data", root, "--steps", steps, "--batch", "16",
			"--backend", "go", "--json"}, extra...)
		require.Equal(t, 0, run(args, &stdout, &stderr), stderr.String())
		var res training.Result
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &res))
		return res
	}
	first := transfer("2", "--checkpoint", dst, "--backbone-lr", "0.0001")
	require.Equal(t, "cnn", first.Model, "the model is the run's")
	require.Equal(t, 100, first.HeadWidth)
	require.NotNil(t, first.Transfer)
	require.Equal(t, src, first.Transfer.From)
	require.Equal(t, "cifar10", first.Transfer.FromDataset)
	require.Equal(t, 0.0001, first.Transfer.BackboneLearningRate)
	require.Len(t, first.Transfer.Carried, 6)
	second := transfer("3", "--checkpoint", dst, "--backbone-lr", "0.0001")
	require.True(t, second.Resumed)
	require.True(t, second.Transfer.Resumed)
	require.Equal(t, 3, second.EndStep)

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, run([]string{"eval", "--checkpoint", dst, "--data", root, "--backend", "go"}, &stdout, &stderr), stderr.String())
	firstLine := strings.SplitN(stdout.String(), "\n", 2)[0]
	require.True(t, strings.HasPrefix(firstLine, "checkpoint "+dst+": cnn for cifar100 (100 classes), step 3"), firstLine)

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, run([]string{"train", "--from", src, "--freeze", "backbone", "--dataset", "cifar100", "--data", root, "--steps", "2",
		"--batch", "16", "--backend", "go", "--progress", "off"}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "transferred from "+src+" (cifar10, head 10, step 2) to cifar100 (head 100)\n")
	require.Contains(t, stdout.String(), "  recipe: linear probe: backbone frozen (its weights unchanged), head learning rate 0.001\n")

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--from", root}, "cifarlab train: training: " + root + " is not a trained cifarlib run ("},
		{[]string{"--from", src, "--model", "linear"}, "cifarlab train: training: run " + src + " is a cnn, but the model asked for is a linear"},
		{[]string{"--from", src, "--freeze", "head"}, `cifarlab train: unknown --freeze "head": use "" (fine-tune everything) or "backbone" (linear probe)`},
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 2, run(append([]string{"train", "--dataset", "cifar100", "--data", root, "--steps", "1", "--backend", "go"}, c.args...),
			&stdout, &stderr), c.args)
		require.True(t, strings.HasPrefix(stderr.String(), c.msg), stderr.String())
	}
}
