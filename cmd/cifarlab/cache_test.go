package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/internal/compilecache"
	"github.com/cifarlab/cifarlab/internal/testenv"
	"github.com/stretchr/testify/require"
)

// cli runs the cifarlab binary with env added, and returns its stdout; it must succeed.
func cli(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "cifarlab %s:\n%s\n%s", strings.Join(args, " "), out, stderr.String())
	return string(out)
}

// The workshop's way, as the README says it: cache warm --into DIR compiles a run's programs
// into a shared folder (readable by all, writable by its owner); a new process given it as
// $CIFARLAB_COMPILE_CACHE_SHARED trains with no compile; cache show lists both folders, the
// programs and their loads; cache clear empties the user's folder and leaves the shared one.
func TestCacheCommandWarmShowClear(t *testing.T) {
	testenv.XLACPUPluginOrSkip(t)
	if testing.Short() {
		t.Skip("builds the cifarlab binary")
	}
	bin, root := buildCLI(t), trainTestData(t, data.CIFAR10())
	shared, own := filepath.Join(t.TempDir(), "shared"), filepath.Join(t.TempDir(), "own")
	env := []string{compilecache.DirEnv + "=" + own, compilecache.SharedEnv + "=", "GOMLX_BACKEND="}
	settings := []string{"--model", "cnn", "--batch", "8", "--eval-batch", "16", "--backend", "cpu"}

	out := cli(t, bin, env, append([]string{"cache", "warm", "--into", shared}, settings...)...)
	require.Contains(t, out, "warmed --model cnn --batch 8 --eval-batch 16 --backend cpu: 3 programs compiled, 0 already there")
	require.Contains(t, out, shared+" holds 3 compiled programs")
	require.Contains(t, out, "share it read-only: CIFARLAB_COMPILE_CACHE_SHARED="+shared)
	fi, err := os.Stat(shared)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	files, _ := filepath.Glob(filepath.Join(shared, "*"))
	require.Len(t, files, 3, "the entries only: no hit counts")
	for _, f := range files {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), f)
	}

	env[1] = compilecache.SharedEnv + "=" + shared
	var res training.Result
	require.NoError(t, json.Unmarshal([]byte(cli(t, bin, env, append([]string{"train", "--dataset", "cifar10", "--data", root,
		"--steps", "3", "--json"}, settings...)...)), &res))
	require.Zero(t, res.Timeline.Compiles(""), "a new process compiles nothing: %s", res.Timeline)
	require.Equal(t, 3, res.Timeline.Loads(""), res.Timeline.String())

	// Another batch size compiles, into the user's own folder.
	require.NoError(t, json.Unmarshal([]byte(cli(t, bin, env, "train", "--dataset", "cifar10", "--data", root, "--steps", "2",
		"--json", "--model", "cnn", "--batch", "4", "--eval-batch", "16", "--backend", "cpu")), &res))
	require.Equal(t, 1, res.Timeline.Compiles(""), "the train step of batch 4: %s", res.Timeline)

	show := cli(t, bin, env, "cache")
	require.Regexp(t, `yours: `+regexp.QuoteMeta(own)+` \(\$CIFARLAB_COMPILE_CACHE\): 1 programs, \d+ KiB of 4\.0 GiB \(\$CIFARLAB_COMPILE_CACHE_MAX\), loaded 0 times`, show)
	require.Contains(t, show, "shared, read-only: "+shared+" ($CIFARLAB_COMPILE_CACHE_SHARED): 3 programs")
	require.Contains(t, show, "VariableInitialization")
	require.Regexp(t, `\n\w{12}\s+Trainer_1\s+\d+ KiB\s+1\s+`, show)
	var listed struct {
		Dir     string               `json:"dir"`
		Shared  []string             `json:"shared"`
		Entries []compilecache.Entry `json:"entries"`
	}
	require.NoError(t, json.Unmarshal([]byte(cli(t, bin, env, "cache", "show", "--json")), &listed))
	require.Equal(t, own, listed.Dir)
	require.Equal(t, []string{shared}, listed.Shared)
	require.Len(t, listed.Entries, 4, "1 own, 3 shared")

	require.Contains(t, cli(t, bin, env, "cache", "clear"), "removed 1 compiled programs")
	require.NoError(t, json.Unmarshal([]byte(cli(t, bin, env, "cache", "show", "--json")), &listed))
	require.Len(t, listed.Entries, 3, "the shared folder is left alone")
}
