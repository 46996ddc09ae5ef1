package kernel

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/internal/proctree"
	"github.com/stretchr/testify/require"
)

// rssMiB is the resident memory of process pid in MiB (0 when it is gone).
func rssMiB(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kib / 1024
		}
	}
	return 0
}

// TestGoplsStartsOnFirstCompletion starts the real CPU kernel with jupyter_client, runs a cell
// and leaves the kernel idle, as a notebook opened only to be read does: GoNB has started
// "gopls" and connected to it, but that is the supervisor's lazy gopls (cmd/cifarlab-kernel,
// lazygopls.go), a few MB, and no real gopls runs. The first completion request (Tab) starts
// the real one, which answers it (fmt.Pri → Println; GoNB gives up on an answer after 8 s, so
// while gopls loads the workspace the request is repeated, as a user presses Tab again); the
// shutdown ends both.
func TestGoplsStartsOnFirstCompletion(t *testing.T) {
	repo := testRepo(t)
	py := requireLab(t, repo)
	jupyterDir := installKernels(t, repo)
	realGopls, err := filepath.EvalSymlinks(repo.Tool("gopls"))
	require.NoError(t, err)
	dir := t.TempDir()
	cell := filepath.Join(dir, "cell.go")
	require.NoError(t, os.WriteFile(cell, []byte("%%\nfmt.Println(\"hello\")"), 0o644))
	complete := filepath.Join(dir, "complete.go")
	require.NoError(t, os.WriteFile(complete, []byte("import \"fmt\"\n\n%%\nfmt.Pri"), 0o644))

	cmd := exec.Command(py, filepath.Join(repo.Dir, "kernel", "testdata", "gopls_lazy.py"), CPUKernel, cell, complete)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), dataDirEnv(jupyterDir)...)
	if v := os.Getenv("TEST_LAZY"); v != "" {
		cmd.Env = append(cmd.Env, "CIFARLAB_LAZY_GOPLS="+v)
	}
	cmd.Stderr = testWriter{t}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.WaitDelay = 10 * time.Second // the kernel, if the script dies first, still holds its stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	next := func(v any) {
		t.Helper()
		require.True(t, lines.Scan(), "gopls_lazy.py ended early: %v", lines.Err())
		require.NoError(t, json.Unmarshal(lines.Bytes(), v), lines.Text())
	}
	goplsOf := func(pid int) (real, lazy []proctree.Proc) {
		procs, _ := kernelProcs(t, pid)
		for _, p := range procs {
			exe, err := os.Readlink("/proc/" + strconv.Itoa(p.Pid) + "/exe")
			switch {
			case err != nil:
			case exe == realGopls:
				real = append(real, p)
			case p.Comm == "gopls":
				lazy = append(lazy, p)
			}
		}
		return real, lazy
	}

	var started struct {
		Pid  int    `json:"pid"`
		Cell string `json:"cell"`
		Text string `json:"text"`
	}
	next(&started)
	t.Cleanup(func() { _ = syscall.Kill(started.Pid, syscall.SIGTERM) }) // the kernel, should the script die first
	require.Equal(t, "ok", started.Cell, started.Text)
	// GoNB connects to its gopls 12 s after its start (goplsclient.ConnectTimeout), and
	// initializes it: wait for that, and a little more.
	time.Sleep(20 * time.Second)
	real, lazy := goplsOf(started.Pid)
	require.Empty(t, real, "a real gopls runs in a kernel nobody asked for a completion")
	require.Len(t, lazy, 1, "GoNB's gopls is the lazy one")
	t.Logf("idle kernel: lazy gopls (pid %d) %.1f MiB", lazy[0].Pid, rssMiB(lazy[0].Pid))
	require.Less(t, rssMiB(lazy[0].Pid), 30.0)

	_, err = io.WriteString(stdin, "\n")
	require.NoError(t, err)
	var completion struct {
		Matches  []string `json:"matches"`
		Status   string   `json:"status"`
		Reply    any      `json:"reply"`
		Attempts int      `json:"attempts"`
		Seconds  float64  `json:"seconds"`
	}
	next(&completion)
	t.Logf("the completion came after %d request(s), %.1f s (the first starts gopls, which loads the workspace)", completion.Attempts, completion.Seconds)
	require.Equal(t, "ok", completion.Status, "%v", completion.Reply)
	require.Contains(t, completion.Matches, "Println", "the real gopls answered")
	real, _ = goplsOf(started.Pid)
	require.NotEmpty(t, real, "the completion started the real gopls")
	for _, p := range real { // gopls, and the telemetry process it starts
		t.Logf("after a completion: real gopls (pid %d) %.1f MiB", p.Pid, rssMiB(p.Pid))
	}
	procs, marker := kernelProcs(t, started.Pid)

	_, err = io.WriteString(stdin, "\n")
	require.NoError(t, err)
	var ended struct {
		Ended bool `json:"ended"`
	}
	next(&ended)
	require.True(t, ended.Ended)
	requireGone(t, procs, marker, "the shutdown")
}
