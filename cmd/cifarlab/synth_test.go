package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/stretchr/testify/require"
)

// runDataCmd runs the CLI in-process and returns its exit code, stdout and stderr.
func runDataCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestSynthCommand(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runDataCmd(t, "synth", "--dataset", "cifar10", "--out", out, "--train", "23", "--test", "7", "--seed", "5", "--noise", "0.25")
	require.Equal(t, 0, code, stderr)
	require.Empty(t, stderr)
	dir := filepath.Join(out, "cifar-10-batches-bin")
	require.Equal(t, "wrote synthetic cifar10 to "+dir+": 23 train records in 5 files, 7 test records (seed 5, label noise 0.25)\n", stdout)

	spec := data.CIFAR10()
	train, err := data.LoadSplit(out, spec, data.SplitTrain)
	require.NoError(t, err)
	require.Equal(t, 23, train.Len())
	want, err := data.SynthesizeRecords(spec, data.SplitTrain, data.SynthOptions{Seed: 5, TrainSize: 23, TestSize: 7, LabelNoise: 0.25})
	require.NoError(t, err)
	require.Equal(t, want.RawLabels, train.RawLabels, "the CLI writes what the library generates")
	info, err := data.ReadSynthInfo(out, spec)
	require.NoError(t, err)
	require.Equal(t, data.SynthInfo{Generator: "cifarlab-synth-v1", Dataset: "cifar10", Seed: 5, TrainSize: 23, TestSize: 7, LabelNoise: 0.25}, info)

	code, stdout, stderr = runDataCmd(t, "synth", "--dataset", "cifar-100", "--out", out, "--train", "1", "--test", "1")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "wrote synthetic cifar100 to "+filepath.Join(out, "cifar-100-binary")+": 1 train records in 1 file, 1 test records (seed 1, label noise 0)\n", stdout)
	fi, err := os.Stat(filepath.Join(out, "cifar-100-binary", "train.bin"))
	require.NoError(t, err)
	require.Equal(t, int64(3074), fi.Size())
}

func TestSynthCommandErrors(t *testing.T) {
	out := t.TempDir()
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"synth", "--out", out}, 2, "cifarlab synth: --dataset is required: cifar10 or cifar100\n"},
		{[]string{"synth", "--dataset", "cifar10"}, 2, "cifarlab synth: --out is required: the folder to write the dataset to\n"},
		{[]string{"synth", "--dataset", "mnist", "--out", out}, 2, "cifarlab synth: data: unknown dataset \"mnist\": use \"cifar10\" or \"cifar100\"\n"},
		{[]string{"synth", "--dataset", "cifar10", "--out", out, "--train", "0"}, 2, "cifarlab synth: --train 0 and --test 1000 must be positive\n"},
		{[]string{"synth", "--dataset", "cifar10", "--out", out, "--train", "4"}, 1, "cifarlab synth: data: synthetic cifar10 train size 4 must be in [5, 1000000] (one record per file at least)\n"},
		{[]string{"synth", "--dataset", "cifar10", "--out", out, "--noise", "1.5"}, 1, "cifarlab synth: data: label noise 1.5 must be in [0, 1)\n"},
		{[]string{"synth", "--dataset", "cifar10", "--out", out, "extra"}, 2, "cifarlab synth: unexpected arguments [\"extra\"]\n"},
		{[]string{"synth", "--bogus"}, 1, "cifarlab synth: flag provided but not defined: -bogus\n"},
	}
	for _, tc := range tests {
		code, _, stderr := runDataCmd(t, tc.args...)
		require.Equal(t, tc.code, code, "%v", tc.args)
		require.Equal(t, tc.stderr, stderr, "%v", tc.args)
	}
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Empty(t, entries, "failed commands must not write anything")

	code, stdout, stderr := runDataCmd(t, "synth", "-h")
	require.Equal(t, 0, code)
	require.Empty(t, stderr)
	require.Contains(t, stdout, "usage: cifarlab synth --dataset cifar10|cifar100 --out DIR")
	require.Contains(t, stdout, "-noise")
}
