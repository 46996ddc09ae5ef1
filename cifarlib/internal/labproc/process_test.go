package labproc

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMain serves as a lab process when Client.start runs this test binary as one (ServeEnv
// set), with a handler that answers its pid: the real start, in a process of its own.
func TestMain(m *testing.M) {
	if os.Getenv(ServeEnv) != "" {
		reason, err := ServeFromEnv(func(context.Context, *Request, *Stream) ([]byte, error) {
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
	require.Equal(t, fmt.Sprintf("lab process: the previous one (pid %d) died (killed, or out of memory: see %s); starting a new one; nothing on disk is lost\n",
		first, LogPath(folder)), notes.String())

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

// sessionOf returns the session id of process pid (field 6 of /proc/PID/stat).
func sessionOf(t *testing.T, pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[3]
}
