package labproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/internal/oomkill"
	"github.com/cifarlab/cifarlab/internal/oomkill/oomtest"
	"github.com/stretchr/testify/require"
)

// TestMain serves as a lab process when Client.start runs this test binary as one (ServeEnv
// set), with a handler that answers its pid: the real start, in a process of its own.
func TestMain(m *testing.M) {
	if os.Getenv(ServeEnv) != "" {
		reason, err := ServeFromEnv(func(_ context.Context, req *Request, _ *Stream) ([]byte, error) {
			if req.Op == "alloc" { // more than TestOutOfMemory's cgroup allows
				oomtest.Allocate(1 << 30)
			}
			return []byte(strconv.Itoa(os.Getpid())), nil
		}, nil, nil, nil)
		fmt.Fprintln(os.Stderr, "ended:", reason, err)
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestStartedProcess starts real lab processes (this test binary, in a session of its own):
// the first request starts one, the next uses it; killed with SIGKILL, the next request says so
// in one line and starts another; a client of other code replaces it; idle, it ends and
// removes its socket and pid file; a bad idle time is an error that says how to write one.
func TestStartedProcess(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv(GoNBTmpEnv, tmp)
	t.Setenv(IdleEnv, "2s")
	folder, err := Folder(tmp)
	require.NoError(t, err)
	var notes strings.Builder
	c := &Client{Folder: folder, Fingerprint: "fp", Note: &notes}
	pidOf := func(c *Client) int {
		t.Helper()
		res, err := c.Do(context.Background(), &Request{Op: "pid"}, func(*Message) {})
		require.NoError(t, err)
		pid, err := strconv.Atoi(string(res.Payload))
		require.NoError(t, err)
		return pid
	}
	first := pidOf(c)
	require.NotEqual(t, os.Getpid(), first)
	require.Equal(t, first, PID(folder))
	require.Equal(t, strconv.Itoa(first), sessionOf(t, first), "a session of its own: the cell's interrupt and kill do not reach it")
	require.Equal(t, first, pidOf(c), "the next request, the same process")
	require.Empty(t, notes.String())

	require.NoError(t, syscall.Kill(first, syscall.SIGKILL))
	waitGone(first, 5*time.Second)
	second := pidOf(c)
	require.NotEqual(t, first, second)
	how := "killed or crashed, not out of memory" // kill -9, which the memory cgroup did not count
	if !oomkill.Take().Known() {
		how = "killed, or out of memory" // no memory cgroup to tell
	}
	require.Equal(t, fmt.Sprintf("lab process: the previous one (pid %d) ended (%s: see %s); starting a new one; nothing on disk is lost\n",
		first, how, LogPath(folder)), notes.String())

	notes.Reset()
	third := pidOf(&Client{Folder: folder, Fingerprint: "edited", Note: &notes})
	require.NotEqual(t, second, third)
	require.Equal(t, fmt.Sprintf("lab process: the running one (pid %d) cannot serve this cell: the library code changed since it started; starting a new one\n", second), notes.String())
	require.Eventually(t, func() bool { return syscall.Kill(second, 0) != nil }, 5*time.Second, 20*time.Millisecond, "the replaced one ends")

	require.Eventually(t, func() bool { return syscall.Kill(third, 0) != nil }, 10*time.Second, 50*time.Millisecond, "idle for 2s, it ends")
	_, err = os.Stat(SocketPath(folder))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Zero(t, PID(folder))
	log, err := os.ReadFile(LogPath(folder))
	require.NoError(t, err)
	require.Contains(t, string(log), "ended: the library code changed since it started")
	require.Contains(t, string(log), "ended: idle for 2s")

	t.Setenv(IdleEnv, "soon")
	_, err = c.Do(context.Background(), &Request{Op: "pid"}, func(*Message) {})
	require.ErrorIs(t, err, ErrNotStarted)
	require.ErrorContains(t, err, `$CIFARLAB_LAB_IDLE=\"soon\": use a duration such as 30m or 90s`)
}

// oomHelperEnv makes the test binary the cell of TestOutOfMemory, in the memory cgroup it names.
const oomHelperEnv = "LABPROC_TEST_OOM_CGROUP"

// TestOutOfMemory runs a cell (a helper process: this test binary) in a memory cgroup of 160
// MiB, whose lab process allocates 1 GiB: the kernel's out-of-memory killer ends the lab process,
// and the cell's request says that memory ran out, the limit, and what to do; the next request
// starts a new lab process and says why the previous one died.
func TestOutOfMemory(t *testing.T) {
	if dir := os.Getenv(oomHelperEnv); dir != "" {
		require.NoError(t, oomtest.Enter(dir))
		tmp := t.TempDir()
		t.Setenv(GoNBTmpEnv, tmp)
		folder, err := Folder(tmp)
		require.NoError(t, err)
		var notes strings.Builder
		c := &Client{Folder: folder, Fingerprint: "fp", Note: &notes}
		_, err = c.Do(context.Background(), &Request{Op: "alloc"}, func(*Message) {})
		var died *DiedError
		require.ErrorAs(t, err, &died)
		fmt.Printf("ERROR %s\n", err)
		res, err := c.Do(context.Background(), &Request{Op: "pid"}, func(*Message) {})
		require.NoError(t, err)
		require.NotEqual(t, strconv.Itoa(died.PID), string(res.Payload))
		fmt.Printf("NOTE %s", notes.String())
		require.NoError(t, syscall.Kill(PID(folder), syscall.SIGTERM))
		return
	}
	const limit = 160 << 20
	dir := oomtest.Cgroup(t, limit)
	cell := exec.Command(os.Args[0], "-test.run=^TestOutOfMemory$")
	cell.Env = append(os.Environ(), oomHelperEnv+"="+dir)
	out, err := cell.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("the cell's output:\n%s", out)
	want := "memory ran out (limit 160 MiB, memory cgroup " + dir + ": 1 out-of-memory kill)"
	require.Regexp(t, `ERROR labproc: the lab process \(pid \d+\) was killed during the request because `+regexp.QuoteMeta(want)+
		`; what it saved is in the run folder. To go on, `+regexp.QuoteMeta(oomkill.Advice)+"\n", string(out))
	require.Regexp(t, `NOTE lab process: the previous one \(pid \d+\) was killed because `+regexp.QuoteMeta(want)+
		`; starting a new one; nothing on disk is lost; to keep it alive, `+regexp.QuoteMeta(oomkill.Advice)+"\n", string(out))
}

// sessionOf returns the session id of process pid (field 6 of /proc/PID/stat).
func sessionOf(t *testing.T, pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[3]
}
