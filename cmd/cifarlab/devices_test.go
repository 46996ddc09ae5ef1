package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/internal/plugins"

	"github.com/stretchr/testify/require"
)

// --devices errors: a count the pure-Go backend cannot run and a malformed count are usage
// errors (exit status 2) with the library's message.
func TestTrainCommandDevicesErrors(t *testing.T) {
	t.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"train", "--steps", "3", "--backend", "go", "--devices", "2"},
			"cifarlab train: backends: 2 devices asked of the go (pure Go, CPU) backend, which has one device and runs no " +
				"distributed programs: use the cpu backend (XLA's CPU plugin, which can expose several CPU devices: " +
				plugins.XLACPUInstallHint + ") or cuda for several GPUs, or 1 device\n"},
		{[]string{"train", "--steps", "3", "--devices", "0"}, "cifarlab train: --devices \"0\": use a whole number > 0 or all\n"},
		{[]string{"eval", "--checkpoint", t.TempDir(), "--devices", "many"}, "cifarlab eval: --devices \"many\": use a whole number > 0 or all\n"},
		{[]string{"eval", "--checkpoint", t.TempDir(), "--backend", "go", "--devices", "4"},
			"cifarlab eval: backends: 4 devices asked of the go (pure Go, CPU) backend, which has one device and runs no " +
				"distributed programs: use the cpu backend (XLA's CPU plugin, which can expose several CPU devices: " +
				plugins.XLACPUInstallHint + ") or cuda for several GPUs, or 1 device\n"},
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 2, run(c.args, &stdout, &stderr), "%v", c.args)
		require.Equal(t, c.msg, stderr.String(), "%v", c.args)
	}
}

// train --devices 4 on XLA's CPU plugin, its checkpoint evaluated with --devices 2 and 1 (the
// same numbers), and a batch that does not split across the devices.
func TestTrainCommandDevices(t *testing.T) {
	t.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	if b, err := backends.New("xla:cpu"); err != nil {
		t.Skipf("needs XLA's CPU plugin: %v", err)
	} else {
		b.Finalize()
	}
	root := trainTestData(t, data.CIFAR10())
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	var stdout, stderr bytes.Buffer
	code := run([]string{"train", "--data", root, "--model", "cnn", "--steps", "2", "--batch", "16", "--backend", "cpu",
		"--devices", "4", "--checkpoint", ckpt, "--no-eval", "--json"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	var res training.Result
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res))
	require.Equal(t, 4, res.Devices)
	require.Equal(t, 16, res.BatchSize)
	require.Equal(t, 2, res.EndStep)

	var accuracy []float64
	for _, devices := range []string{"2", "1"} {
		stdout.Reset()
		code = run([]string{"eval", "--data", root, "--checkpoint", ckpt, "--backend", "cpu", "--devices", devices, "--batch", "20",
			"--json"}, &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
		var ev training.EvalResult
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &ev))
		require.Equal(t, 100, ev.Examples)
		accuracy = append(accuracy, ev.Accuracy)
	}
	require.Equal(t, accuracy[0], accuracy[1])

	stdout.Reset()
	stderr.Reset()
	code = run([]string{"train", "--data", root, "--steps", "1", "--batch", "10", "--backend", "cpu", "--devices", "4"}, &stdout, &stderr)
	require.Equal(t, 2, code)
	require.Equal(t, "cifarlab train: --batch 10 does not split across 4 devices (10 is not a "+
		"multiple of 4): use 8 or 12, or another number of devices\n", stderr.String())
	_, err := os.Stat(filepath.Join(ckpt, runs.HistoryFileName))
	require.NoError(t, err)
}
