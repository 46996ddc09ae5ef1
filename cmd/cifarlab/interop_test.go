package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/internal/safetensors"
)

// twinFixture is the cnn twin's state_dict written by real PyTorch (cifarlib/interop/testdata).
var twinFixture = filepath.Join("..", "..", "cifarlib", "interop", "testdata", "cnn_twin.pt")

// cifarlab import of the cnn twin, then eval and diagnose --from on the run, and export back:
// the commands a PyTorch user runs.
func TestImportExportCommands(t *testing.T) {
	root := trainTestData(t, data.CIFAR10())
	run1 := filepath.Join(t.TempDir(), "twin")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"import", "--from", twinFixture, "--arch", "cnn", "--checkpoint", run1,
		"--check", "--data", root}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "imported "+twinFixture+" (cnn-twin naming, 8 tensors) into "+run1+": cnn for cifar10")
	require.Contains(t, stdout.String(), "check: the lab measures ")
	require.Contains(t, stdout.String(), "on 100 test images")
	next := nextCommands(t, stdout.String())
	require.Equal(t, []string{"eval", "--checkpoint", run1, "--data", root}, next[0], "the suggested eval runs as printed")
	stdout.Reset()
	require.Equal(t, 0, run(next[0], &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "checkpoint "+run1+": cnn for cifar10 (10 classes), step 0")

	stdout.Reset()
	require.Equal(t, 0, run([]string{"eval", "--checkpoint", run1, "--data", root, "--backend", "go"}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "checkpoint "+run1+": cnn for cifar10 (10 classes), step 0")

	// The suggested train-on (2 steps instead of 500) continues the imported run (issue 33.3).
	trainOn := append([]string{}, next[1]...)
	require.Equal(t, "500", trainOn[len(trainOn)-1])
	trainOn[len(trainOn)-1] = "2"
	stdout.Reset()
	require.Equal(t, 0, run(append(trainOn, "--batch", "16", "--no-eval", "--progress", "off", "--backend", "go"), &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "steps: 2")

	root100 := trainTestData(t, data.CIFAR100(data.LabelsFine))
	stdout.Reset()
	run([]string{"diagnose", "--dataset", "cifar100", "--data", root100, "--from", run1}, &stdout, &stderr)
	require.Contains(t, stdout.String(), "Dataset switch checklist for run "+run1+" (trained on cifar10):")
	require.Contains(t, stdout.String(), "fix: transfer the run (training.Settings.Transfer.From; the settings from="+run1+" dataset=cifar100)")

	out := filepath.Join(t.TempDir(), "twin.safetensors")
	stdout.Reset()
	require.Equal(t, 0, run([]string{"export", "--run", run1, "--out", out, "--backend", "go"}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "transforms.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.2435, 0.2616))")
	f, err := safetensors.ReadFile(out)
	require.NoError(t, err)
	require.Len(t, f.Tensors, 8)
	require.Equal(t, "pt", f.Metadata["format"])
}

// Refusals through the CLI: a hostile file, a wrong architecture and a missing flag exit
// non-zero with the library's message and write nothing.
func TestImportCommandRefuses(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "run")
	evil := filepath.Join("..", "..", "internal", "torchfile", "testdata", "evil_os_system.pt")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"import", "--from", evil, "--checkpoint", dir}, 1, "posix.system: global not allowed"},
		{[]string{"import", "--from", twinFixture, "--checkpoint", dir}, 1, "import it with --arch cnn --names cnn-twin"},
		{[]string{"import", "--from", twinFixture}, 2, "--from FILE and --checkpoint RUN_DIR are required"},
		{[]string{"import", "--from", twinFixture, "--checkpoint", dir, "--normalize", "0.5"}, 2, "want MEAN,MEAN,MEAN/STD,STD,STD"},
		{[]string{"export", "--run", dir, "--out", filepath.Join(parent, "x.onnx"), "--format", "onnx"}, 2, "only safetensors is written"},
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, tc.code, run(tc.args, &stdout, &stderr), tc.args)
		require.Contains(t, stderr.String(), tc.want)
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		require.Empty(t, entries)
	}
}

// nextCommands are the commands of import's "next:" lines, as argument lists (without
// "cifarlab" and the comment in parentheses).
func nextCommands(t *testing.T, out string) [][]string {
	t.Helper()
	_, after, ok := strings.Cut(out, "next:\n")
	require.True(t, ok, out)
	var cmds [][]string
	for _, line := range strings.Split(strings.TrimSpace(after), "\n") {
		line, _, _ = strings.Cut(strings.TrimSpace(line), "   (")
		fields := strings.Fields(line)
		require.Equal(t, "cifarlab", fields[0], line)
		cmds = append(cmds, fields[1:])
	}
	return cmds
}
