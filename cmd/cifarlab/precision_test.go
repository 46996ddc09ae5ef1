package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/stretchr/testify/require"
)

// TestPrecisionFlag: train --precision bf16-mixed runs on the pure-Go backend and says so in
// its summary and JSON; eval evaluates that checkpoint in either precision and says which; an
// unknown precision is a usage error (exit 2) naming the choices.
func TestPrecisionFlag(t *testing.T) {
	root := trainTestData(t, data.CIFAR10())
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	var stdout, stderr bytes.Buffer
	args := []string{"train", "--data", root, "--model", "linear", "--steps", "2", "--batch", "16", "--backend", "go",
		"--checkpoint", ckpt, "--no-eval", "--progress", "off"}
	require.Equal(t, 0, run(append(args, "--precision", "bf16-mixed"), &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), ", precision bf16-mixed, batch 16\n")

	stdout.Reset()
	args[6] = "3" // --steps 3: resume in f32.
	require.Equal(t, 0, run(append(args, "--json"), &stdout, &stderr), stderr.String())
	var res struct {
		Precision string `json:"precision"`
		EndStep   int    `json:"end_step"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res))
	require.Equal(t, "f32", res.Precision)
	require.Equal(t, 3, res.EndStep)

	for _, p := range []string{"f32", "bf16-mixed"} {
		stdout.Reset()
		require.Equal(t, 0, run([]string{"eval", "--checkpoint", ckpt, "--data", root, "--backend", "go", "--precision", p}, &stdout, &stderr), stderr.String())
		require.Equal(t, "checkpoint "+ckpt+": linear for cifar10 (10 classes), step 3, precision "+p, strings.SplitN(stdout.String(), "\n", 2)[0])
		stdout.Reset()
		require.Equal(t, 0, run([]string{"eval", "--checkpoint", ckpt, "--data", root, "--backend", "go", "--precision", p, "--json"}, &stdout, &stderr), stderr.String())
		var ev struct {
			Precision string `json:"precision"`
			Examples  int    `json:"examples"`
		}
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &ev))
		require.Equal(t, p, ev.Precision)
		require.Positive(t, ev.Examples)
	}

	stderr.Reset()
	require.Equal(t, 2, run(append(args, "--precision", "fp16"), &stdout, &stderr))
	require.Contains(t, stderr.String(), `--precision "fp16": use f32 or bf16-mixed`)
	stderr.Reset()
	require.Equal(t, 2, run([]string{"eval", "--checkpoint", ckpt, "--precision", "bf16"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), `--precision "bf16": use f32 or bf16-mixed`)
}
