package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/internal/compilecache"
	"github.com/cifarlab/cifarlab/internal/kernel"
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
	require.Contains(t, show, "shared, read-only: "+shared+" ($CIFARLAB_COMPILE_CACHE_SHARED): 3 programs (3 compiled on this machine)")
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

// cache check says in one line whether the compile cache serves this machine, and doctor says
// the same: a shared folder of this machine's programs does (exit 0); one whose programs were all
// compiled on another machine (an image built on another CPU model) does not (exit 1, with the
// fix), nor does a folder refused for being writable by others.
func TestCacheCheck(t *testing.T) {
	id, machine := backends.Machine()
	fill := func(machineID, desc string) string {
		dir := filepath.Join(t.TempDir(), "shared")
		c := compilecache.Open(compilecache.Config{Dir: dir}, nil)
		for i := range 3 {
			c.Put(compilecache.Key(sha256.Sum256([]byte{byte(i)})), compilecache.Meta{MachineID: machineID, Machine: desc}, []byte("program"))
		}
		require.NoError(t, os.Chmod(dir, 0o755))
		return dir
	}
	here, elsewhere := fill(id, machine), fill("0123456789abcdef", "CPU GenuineIntel family 6 model 85 (flags 1234abcd), no GPU")
	open := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.Mkdir(open, 0o777))
	require.NoError(t, os.Chmod(open, 0o777))
	own := filepath.Join(t.TempDir(), "own")
	t.Setenv(compilecache.DirEnv, own)
	for _, tc := range []struct {
		shared, says string
		code         int
	}{
		{here, "compile cache: shared " + here + ": 3 programs (3 compiled on this machine); yours " + own + " (this machine: " + machine + ")", 0},
		{"", "compile cache: no shared folder ($CIFARLAB_COMPILE_CACHE_SHARED); yours " + own, 0},
		{elsewhere, "compile cache: the shared folder " + elsewhere + " ($CIFARLAB_COMPILE_CACHE_SHARED) holds 3 programs compiled on another machine " +
			"(CPU GenuineIntel family 6 model 85 (flags 1234abcd), no GPU), none for this one (" + machine + "): they do not load here", 1},
		{elsewhere + ":" + here, "compile cache: shared " + elsewhere + ": 3 programs (0 compiled on this machine); shared " + here + ": 3 programs (3 compiled", 0},
		{open, "compile cache: " + open + " ($CIFARLAB_COMPILE_CACHE_SHARED) is writable by other users (mode 0777)", 1},
	} {
		t.Setenv(compilecache.SharedEnv, tc.shared)
		var stdout, stderr strings.Builder
		require.Equal(t, tc.code, run([]string{"cache", "check"}, &stdout, &stderr), tc.shared)
		require.Contains(t, stdout.String(), tc.says)
		require.Equal(t, 1, strings.Count(stdout.String(), "\n"), "one line: %s", stdout.String())
		doctor := probeCompileCache(context.Background())[0]
		require.Equal(t, "compile cache", doctor.Name)
		require.Contains(t, "compile cache: "+doctor.Detail, tc.says)
		if tc.code == 0 {
			require.Equal(t, kernel.StatusOK, doctor.Status)
		} else {
			require.Equal(t, kernel.StatusWarn, doctor.Status)
			require.Contains(t, doctor.Fix, "cifarlab cache warm --into DIR --notebook NOTEBOOK")
		}
	}
	t.Setenv(compilecache.SharedEnv, elsewhere)
	var stdout, stderr strings.Builder
	require.Zero(t, run([]string{"cache", "show"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "shared, read-only: "+elsewhere+" ($CIFARLAB_COMPILE_CACHE_SHARED): 3 programs (0 compiled on this machine)")
	require.Contains(t, stdout.String(), "none for this one ("+machine+"): they do not load here")
}
