package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// train --from onto a dataset of the run's width keeps its head (the summary says so);
// --new-head initialises it afresh; --new-head without --from is refused in flags.
func TestTrainNewHeadFlag(t *testing.T) {
	root := trainTestData(t, data.CIFAR10())
	src := filepath.Join(t.TempDir(), "c10")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"train", "--dataset", "cifar10", "--data", root, "--model", "cnn", "--steps", "1", "--batch", "16",
		"--backend", "go", "--checkpoint", src, "--no-eval", "--progress", "off"}, &stdout, &stderr), stderr.String())
	transfer := func(extra ...string) string {
		var stdout, stderr bytes.Buffer
		args := append([]string{"train", "--from", src, "--dataset", "cifar10", "--data", root, "--steps", "1", "--batch", "16",
			"--backend", "go", "--no-eval", "--progress", "off"}, extra...)
		require.Equal(t, 0, run(args, &stdout, &stderr), stderr.String())
		return stdout.String()
	}
	report := func(extra ...string) *training.TransferReport {
		var res training.Result
		require.NoError(t, json.Unmarshal([]byte(transfer(append(extra, "--json")...)), &res))
		require.NotNil(t, res.Transfer)
		return res.Transfer
	}
	kept := report()
	require.Len(t, kept.KeptHead, 2)
	require.Empty(t, kept.Reinitialized)
	require.Contains(t, transfer(), "  head kept, carried bit for bit: /cnn/head/dense/biases [10], /cnn/head/dense/weights [1024 10]: "+
		"cifar10 has the source's 10 classes (NewHead, the setting new-head, re-initialises it from the seed)\n")
	fresh := report("--new-head")
	require.Empty(t, fresh.KeptHead)
	require.Len(t, fresh.Reinitialized, 2)

	stderr.Reset()
	require.Equal(t, 2, run([]string{"train", "--dataset", "cifar10", "--data", root, "--steps", "1", "--backend", "go", "--new-head"},
		&stdout, &stderr))
	require.Contains(t, stderr.String(), "--new-head true: it applies to a transferred run")
}
