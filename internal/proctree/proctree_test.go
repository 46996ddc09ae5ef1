package proctree

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFindAndEnd starts a process tree as a kernel's would be: a shell carrying the marker,
// in a session of its own, whose child clears its environment (found through its parent), and
// a process of another marker that must be left alone. Find returns the first two, End ends them.
func TestFindAndEnd(t *testing.T) {
	marker := "PROCTREE_TEST=" + strconv.Itoa(os.Getpid()) + "-" + t.Name()
	shell := exec.Command("sh", "-c", "env -i sleep 61 & wait")
	shell.Env = append(os.Environ(), marker)
	shell.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	require.NoError(t, shell.Start())
	go func() { _ = shell.Wait() }()
	other := exec.Command("sleep", "62")
	other.Env = append(os.Environ(), marker+"-other")
	require.NoError(t, other.Start())
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })

	var found []Proc
	comms := map[string]Proc{}
	for deadline := time.Now().Add(10 * time.Second); ; {
		procs, err := List()
		require.NoError(t, err)
		found = Find(procs, marker)
		comms = map[string]Proc{}
		for _, p := range found {
			comms[p.Comm] = p
		}
		if _, ok := comms["sleep"]; ok || time.Now().After(deadline) {
			break // the shell's child has run env, which has run sleep
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Len(t, found, 2, "%v", found)
	require.Contains(t, comms, "sh")
	require.Contains(t, comms, "sleep")
	require.True(t, HasEnv(comms["sh"].Pid, marker))
	require.False(t, HasEnv(comms["sleep"].Pid, marker), "the child cleared its environment: found through its parent")

	require.Empty(t, End(found, 2*time.Second))
	for _, p := range found {
		require.False(t, p.Alive(), "%s still runs", p)
	}
	o, err := Stat(other.Process.Pid)
	require.NoError(t, err)
	require.True(t, o.Alive(), "the other marker's process runs on")
}

// TestStat reads this process, whose command name has no surprise, and a missing pid.
func TestStat(t *testing.T) {
	p, err := Stat(os.Getpid())
	require.NoError(t, err)
	require.Equal(t, os.Getppid(), p.PPid)
	require.True(t, p.Alive())
	_, err = Stat(-1)
	require.Error(t, err)
}

func TestWithoutGuard(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env, want []string
	}{
		{"no marker", []string{"A=1", "B=2"}, []string{"A=1", "B=2"}},
		{"marker dropped", []string{"A=1", GuardEnv + "=12-ab", "B=2"}, []string{"A=1", "B=2"}},
		{"a longer name kept", []string{GuardEnv + "_X=1"}, []string{GuardEnv + "_X=1"}},
		{"empty", []string{}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := WithoutGuard(tc.env); !slices.Equal(got, tc.want) {
				t.Fatalf("WithoutGuard(%q) = %q, want %q", tc.env, got, tc.want)
			}
		})
	}
	t.Setenv(GuardEnv, "1-x")
	if slices.Contains(WithoutGuard(nil), GuardEnv+"=1-x") {
		t.Fatal("WithoutGuard(nil) kept the process's own marker")
	}
}
