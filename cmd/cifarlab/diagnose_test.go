package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/stretchr/testify/require"
)

func diagnoseTestData(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, data.Synthesize(root, data.CIFAR100(data.LabelsFine),
		data.SynthOptions{Seed: 5, TrainSize: 200, TestSize: 100}))
	return root
}

func TestDiagnoseCommandMismatch(t *testing.T) {
	t.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	root := diagnoseTestData(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{"diagnose", "--dataset", "cifar100", "--data", root, "--model", "cnn", "--head", "10", "--batch", "8"},
		&stdout, &stderr)
	require.Equal(t, 1, code, "stderr: %s", stderr.String())
	out := stdout.String()
	require.True(t, strings.HasPrefix(out, "Model: cnn for cifar100 (100 classes), head overridden to 10\n"), out)
	require.Contains(t, out, "head     [8, 10]                10,250\n")
	require.Contains(t, out, "head: 10 outputs != 100 classes: MISMATCH\n")
	require.Contains(t, out, "Batch tensors: images float32 [8 32 32 3], labels int32 [8 1]\n")
	require.Contains(t, out, "Verdict: MISMATCH: the head has 10 outputs but cifar100 has 100 classes\n")
	require.Contains(t, out, `Fix: build the model for the dataset: cifarlib.NewModel(data.CIFAR100(data.LabelsFine), "cnn") without Head(10), so the head has 100 outputs (on the command line: drop --head 10)`)
	require.Equal(t, "cifarlab diagnose: MISMATCH: the head has 10 outputs but cifar100 has 100 classes\n", stderr.String())
}

func TestDiagnoseCommandOK(t *testing.T) {
	t.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	root := diagnoseTestData(t)
	for _, args := range [][]string{
		{"--dataset", "cifar100", "--model", "cnn"},
		{"--dataset", "cifar100", "--labels", "coarse", "--model", "linear"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"diagnose", "--data", root, "--json"}, args...), &stdout, &stderr)
		require.Equal(t, 0, code, "stderr: %s", stderr.String())
		var d cifarlib.Diagnosis
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &d))
		require.True(t, d.OK)
		require.Equal(t, d.NumClasses, d.HeadWidth)
		require.Equal(t, []int{128, 1}, d.LabelShape)
		require.Len(t, d.Splits, 2)
		require.Equal(t, 200, d.Splits[0].Count)
		require.Equal(t, 100, d.Splits[1].Count)
	}
}

func TestDiagnoseCommandBadFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run([]string{"diagnose", "--dataset", "mnist"}, &stdout, &stderr))
	require.Equal(t, "cifarlab diagnose: data: unknown dataset \"mnist\": use \"cifar10\" or \"cifar100\"\n", stderr.String())
	stderr.Reset()
	require.Equal(t, 2, run([]string{"diagnose", "--model", "vgg"}, &stdout, &stderr))
	require.Equal(t, "cifarlab diagnose: unknown --model \"vgg\": use one of linear, cnn, resnet18, resnet20, airbench94\n", stderr.String())
	stderr.Reset()
	require.Equal(t, 1, run([]string{"diagnose", "--data", t.TempDir()}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "is missing: run `cifarlab download --dataset cifar10")
}
