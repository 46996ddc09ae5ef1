package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/stretchr/testify/require"
)

// Runs trained with `cifarlab train --checkpoint` are listed by `cifarlab runs`, as a table and
// as JSON; a folder of something else is listed as foreign.
func TestRunsCommand(t *testing.T) {
	t.Setenv(runs.DirEnv, "")
	root := trainTestData(t, data.CIFAR100(data.LabelsFine))
	runsDir := filepath.Join(root, "runs")
	for _, r := range []struct{ name, head, guard string }{{"fixed", "0", "true"}, {"unguarded", "10", "false"}} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"train", "--dataset", "cifar100", "--data", root, "--model", "linear", "--head", r.head, "--guard=" + r.guard,
			"--steps", "3", "--batch", "16", "--backend", "go", "--progress", "off", "--checkpoint", filepath.Join(runsDir, r.name)}, &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
	}
	require.NoError(t, os.MkdirAll(filepath.Join(runsDir, "photos"), 0o755))

	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"runs", "--data", root}, &stdout, &stderr), stderr.String())
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	require.Len(t, lines, 5, stdout.String())
	require.Equal(t, "runs in "+runsDir+" (TensorBoard: "+tensorboardHint(runsDir)+")", lines[0])
	require.Regexp(t, `^run +status +dataset +data +model +head +guard +devices +steps +loss +test acc +test top-5 +wall time +from +note$`, lines[1])
	require.Regexp(t, `^fixed +done +cifar100 +synthetic +linear +100 +guarded +1 +3 +\d+\.\d{4} +\d+\.\d\d% +\d+\.\d\d% +[0-9.]+m?s +$`, lines[2])
	require.Regexp(t, `^photos +foreign +not a cifarlab run: no run.json, history.json or checkpoint$`, strings.Join(strings.Fields(lines[3]), " "))
	require.Regexp(t, `^unguarded +done +cifar100 +synthetic +linear +10 +UNGUARDED +1 +3 `, lines[4])

	// CIFAR-10 runs evaluate no top-5: their table has no column for it.
	ten := trainTestData(t, data.CIFAR10())
	stdout.Reset()
	require.Equal(t, 0, run([]string{"train", "--data", ten, "--model", "linear", "--steps", "2", "--batch", "16", "--backend", "go", "--progress", "off",
		"--checkpoint", filepath.Join(ten, "runs", "ten")}, &stdout, &stderr), stderr.String())
	stdout.Reset()
	require.Equal(t, 0, run([]string{"runs", "--data", ten}, &stdout, &stderr), stderr.String())
	require.Regexp(t, `\nrun +status +dataset +data +model +head +guard +devices +steps +loss +test acc +wall time +from +note\n`+
		`ten +done +cifar10 +synthetic +linear +10 +guarded +1 +2 +\d+\.\d{4} +\d+\.\d\d% +[0-9.]+m?s +\n$`, stdout.String())

	stdout.Reset()
	require.Equal(t, 0, run([]string{"runs", "--runs", runsDir, "--json"}, &stdout, &stderr), stderr.String())
	var got []runs.Info
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got))
	want, err := runs.List(runsDir)
	require.NoError(t, err)
	for i := range want {
		want[i].History = nil // not in the JSON
	}
	require.Equal(t, []runs.Info(want), got)

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 1, run([]string{"runs", "--runs", filepath.Join(root, "nope")}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "cifarlab runs: runs: listing the runs folder: open "+filepath.Join(root, "nope")+
		": no such file or directory: pass the folder of runs with --runs DIR (or the data folder with --data)")

	empty := t.TempDir()
	stdout.Reset()
	require.Equal(t, 0, run([]string{"runs", "--runs", empty}, &stdout, &stderr))
	require.Equal(t, "no runs in "+empty+"\n", stdout.String())
	stdout.Reset()
	require.Equal(t, 0, run([]string{"runs", "--runs", empty, "--json"}, &stdout, &stderr))
	require.Equal(t, "[]\n", stdout.String())
}

// `cifarlab runs` shows a column for each setting in which the listed runs differ (here the
// seed and the learning rate given to `cifarlab train`), a run not given one showing the value
// it ran with (run.json's values; "default" in a run.json written before them); the settings
// every run shares get none.
func TestRunsCommandDifferingColumns(t *testing.T) {
	t.Setenv(runs.DirEnv, "")
	root := trainTestData(t, data.CIFAR10())
	runsDir := filepath.Join(root, "runs")
	for _, r := range []struct {
		name string
		args []string
	}{
		{"a", []string{"--seed", "1", "--lr", "0.01"}},
		{"b", []string{"--seed", "2", "--lr", "0.02"}},
		{"c", []string{"--seed", "1"}},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"train", "--data", root, "--model", "linear", "--steps", "2", "--batch", "16", "--backend", "go",
			"--progress", "off", "--no-eval", "--checkpoint", filepath.Join(runsDir, r.name)}, r.args...)
		require.Equal(t, 0, run(args, &stdout, &stderr), stderr.String())
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"runs", "--runs", runsDir}, &stdout, &stderr), stderr.String())
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	require.Len(t, lines, 5, stdout.String())
	require.Regexp(t, `^run +status +dataset +data +model +head +guard +devices +seed +learning rate +steps +loss +`, lines[1])
	require.Regexp(t, `^a +done +cifar10 +synthetic +linear +10 +guarded +1 +1 +0\.01 +2 +\d`, lines[2])
	require.Regexp(t, `^b +done +cifar10 +synthetic +linear +10 +guarded +1 +2 +0\.02 +2 +\d`, lines[3])
	require.Regexp(t, `^c +done +cifar10 +synthetic +linear +10 +guarded +1 +1 +0\.001 +2 +\d`, lines[4]) // the value it ran with (run.json's values), not "default"

	// Two of them: only the learning rate differs.
	require.NoError(t, os.RemoveAll(filepath.Join(runsDir, "b")))
	stdout.Reset()
	require.Equal(t, 0, run([]string{"runs", "--runs", runsDir}, &stdout, &stderr), stderr.String())
	lines = strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	require.Regexp(t, `^run +status +dataset +data +model +head +guard +devices +learning rate +steps +loss +`, lines[1])
	require.Regexp(t, `^c +done +cifar10 +synthetic +linear +10 +guarded +1 +0\.001 +2 +\d`, lines[3])
}
