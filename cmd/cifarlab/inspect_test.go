package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/stretchr/testify/require"
)

func TestInspectCommandJSON(t *testing.T) {
	dataDir := t.TempDir()
	code, _, stderr := runDataCmd(t, "synth", "--dataset", "cifar100", "--out", dataDir, "--train", "300", "--test", "100", "--seed", "3", "--noise", "0.1")
	require.Equal(t, 0, code, stderr)

	for _, labels := range []string{"fine", "coarse"} {
		code, stdout, stderr := runDataCmd(t, "inspect", "--dataset", "cifar100", "--labels", labels, "--data", dataDir, "--json")
		require.Equal(t, 0, code, stderr)
		var got inspectReport
		require.NoError(t, json.Unmarshal([]byte(stdout), &got))

		spec, err := data.SpecByName("cifar100", labels)
		require.NoError(t, err)
		require.Equal(t, "cifar100", got.Dataset)
		require.Equal(t, labels, got.Labels)
		require.Equal(t, spec.NumClasses, got.NumClasses)
		require.Equal(t, filepath.Join(dataDir, "cifar-100-binary"), got.Dir)
		require.Equal(t, "binary", got.Layout)
		require.Equal(t, "synthetic", got.Source)
		require.Equal(t, &data.SynthInfo{Generator: "cifarlab-synth-v1", Dataset: "cifar100", Seed: 3, TrainSize: 300, TestSize: 100, LabelNoise: 0.1}, got.Synthetic)
		require.Len(t, got.Splits, 2)
		for k, split := range []data.Split{data.SplitTrain, data.SplitTest} {
			recs, err := data.LoadSplit(dataDir, spec, split)
			require.NoError(t, err)
			s := got.Splits[k]
			require.Equal(t, split.String(), s.Split)
			require.Equal(t, split.Files(spec), s.Files)
			require.Equal(t, recs.Len(), s.Records)
			require.Equal(t, recs.LabelHistogram(), s.Histogram)
			require.Len(t, s.Histogram, spec.NumClasses)
			require.Equal(t, 0, s.LabelMin)
			require.Equal(t, spec.NumClasses-1, s.LabelMax)
			mean, std := recs.ChannelStats()
			require.Equal(t, mean, s.Mean)
			require.Equal(t, std, s.Std)
		}
		if labels == "coarse" {
			require.Equal(t, []int{5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, got.Splits[1].Histogram, "the clean test split is balanced")
		}
	}
}

func TestInspectCommandText(t *testing.T) {
	dataDir := t.TempDir()
	code, _, stderr := runDataCmd(t, "synth", "--dataset", "cifar10", "--out", dataDir, "--train", "25", "--test", "10")
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr := runDataCmd(t, "inspect", "--dataset", "cifar10", "--data", dataDir)
	require.Equal(t, 0, code, stderr)
	require.Empty(t, stderr)
	spec := data.CIFAR10()
	train, err := data.LoadSplit(dataDir, spec, data.SplitTrain)
	require.NoError(t, err)
	mean, std := train.ChannelStats()
	lines := strings.Split(stdout, "\n")
	require.Equal(t, "dataset:  cifar10, fine labels, 10 classes", lines[0])
	require.Equal(t, "data:     "+filepath.Join(dataDir, "cifar-10-batches-bin")+" [synthetic (seed 1, label noise 0), binary layout]", lines[1])
	require.Equal(t, "train: 25 records in data_batch_1.bin, data_batch_2.bin, data_batch_3.bin, data_batch_4.bin, data_batch_5.bin", lines[2])
	require.Equal(t, "  labels: min 0, max 9, 10 of 10 classes present", lines[3])
	require.Equal(t, fmt.Sprintf("  mean:   R %.4f  G %.4f  B %.4f", mean[0], mean[1], mean[2]), lines[4])
	require.Equal(t, fmt.Sprintf("  std:    R %.4f  G %.4f  B %.4f", std[0], std[1], std[2]), lines[5])
	require.Equal(t, "  histogram (label: count):", lines[6])
	require.Equal(t, "      0:3       1:3       2:3       3:3       4:3       5:2       6:2       7:2       8:2       9:2", lines[7])
	require.Equal(t, "test: 10 records in test_batch.bin", lines[8])

	// Data that Prepare put in the synthetic/ sub-folder is found too.
	root := t.TempDir()
	_, err = data.Prepare(root, spec, data.SynthOptions{TrainSize: 5, TestSize: 5})
	require.NoError(t, err)
	code, stdout, stderr = runDataCmd(t, "inspect", "--dataset", "cifar10", "--data", root)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "data:     "+filepath.Join(root, "synthetic", "cifar-10-batches-bin")+" [synthetic")
}

func TestInspectCommandErrors(t *testing.T) {
	empty := t.TempDir()
	code, stdout, stderr := runDataCmd(t, "inspect", "--dataset", "cifar100", "--data", empty)
	require.Equal(t, 1, code)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "cifarlab inspect: data: cifar100 train split: data file "+filepath.Join(empty, "cifar-100-binary", "train.bin")+" is missing")
	require.Contains(t, stderr, "`cifarlab download --dataset cifar100 --data "+empty+"`")

	code, _, stderr = runDataCmd(t, "inspect", "--dataset", "cifar10", "--labels", "coarse", "--data", empty)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "dataset cifar10 has only fine labels")
	code, _, stderr = runDataCmd(t, "inspect", "--data", empty)
	require.Equal(t, 2, code)
	require.Equal(t, "cifarlab inspect: --dataset is required: cifar10 or cifar100\n", stderr)

	// A corrupt file is reported with file, record and offset.
	dataDir := t.TempDir()
	code, _, stderr = runDataCmd(t, "synth", "--dataset", "cifar10", "--out", dataDir, "--train", "10", "--test", "2")
	require.Equal(t, 0, code, stderr)
	bad := filepath.Join(dataDir, "cifar-10-batches-bin", "test_batch.bin")
	raw := append(make([]byte, 0, 2*3073), make([]byte, 3073)...)
	raw = append(raw, 57)
	raw = append(raw, make([]byte, 3072)...)
	require.NoError(t, writeFileForTest(bad, raw))
	code, _, stderr = runDataCmd(t, "inspect", "--dataset", "cifar10", "--data", dataDir)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "cifarlab inspect: data: "+bad+": record 1 at byte offset 3073: label byte is 57, outside the cifar10 class range [0, 10)")
}
