package proctree

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A child of Group leads a process group of its own; StopGroup ends the group, a child that
// ignores SIGTERM too (after the grace, with SIGKILL), and ExitStatus says how each ended.
func TestGroupStopAndExitStatus(t *testing.T) {
	start := func(script string) (*exec.Cmd, chan struct{}, *error) {
		cmd := exec.Command("sh", "-c", script)
		cmd.SysProcAttr = Group(syscall.SIGTERM)
		require.NoError(t, cmd.Start())
		done, err := make(chan struct{}), new(error)
		go func() { *err = cmd.Wait(); close(done) }()
		return cmd, done, err
	}
	cmd, done, err := start("sleep 60")
	pgid, gerr := syscall.Getpgid(cmd.Process.Pid)
	require.NoError(t, gerr)
	require.Equal(t, cmd.Process.Pid, pgid, "the child leads its own group")
	StopGroup(pgid, 5*time.Second, done)
	require.Equal(t, 128+int(syscall.SIGTERM), ExitStatus(*err))

	cmd, done, err = start(`trap "" TERM; echo ready; while :; do sleep 0.05; done`)
	time.Sleep(200 * time.Millisecond) // the trap is set
	began := time.Now()
	StopGroup(cmd.Process.Pid, 300*time.Millisecond, done)
	require.GreaterOrEqual(t, time.Since(began), 300*time.Millisecond, "SIGTERM was ignored: killed after the grace")
	require.Equal(t, 128+int(syscall.SIGKILL), ExitStatus(*err))

	require.Equal(t, 0, ExitStatus(exec.Command("true").Run()))
	require.Equal(t, 3, ExitStatus(exec.Command("sh", "-c", "exit 3").Run()))
	require.Equal(t, ExitInterrupted, ExitStatus(exec.Command("sh", "-c", "exit 130").Run()))
	require.Equal(t, 1, ExitStatus(exec.Command("/no/such/program").Run()), "not started: no exit status")
	require.True(t, Session().Setsid)
}
