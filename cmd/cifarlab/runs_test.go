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
