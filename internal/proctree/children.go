package proctree

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// The children the lab starts, and how they end. Every process the lab starts has an owner and
// an end: a child in a process group of its own dies with its parent (Group), one in a session
// of its own outlives it on purpose and is ended by other means (Session: the kernel's guard,
// the lab process, which ends with its kernel or when idle), a group is stopped in two rounds
// (StopGroup), and a supervisor passes its child's end on as its own (ExitStatus).

// ExitInterrupted is the exit status of a program stopped by SIGINT or SIGTERM after saving its
// work (128 + SIGINT, as a shell reports a program Ctrl-C stopped): `cifarlab train`, a sweep
// and its tasks, a notebook cell. Scripts then do not mistake it for a finished run.
const ExitInterrupted = 130

// Group returns the attributes of a child in a process group of its own, so that a terminal's
// Ctrl-C reaches it once (through its parent, which passes it on), and which receives sig when
// its parent dies (on Linux: PR_SET_PDEATHSIG; the parent's forking thread must live as long as
// the child, see runtime.LockOSThread; elsewhere the group only).
func Group(sig syscall.Signal) *syscall.SysProcAttr { return groupAttr(sig) }

// Session returns the attributes of a child in a session of its own: it outlives its parent and
// its parent's terminal, so its owner must end it (a guard, a pid file, an idle timeout).
func Session() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// StopGroup sends SIGTERM to the process group pgid, waits up to grace until done is closed (the
// group's leader has been reaped), then sends SIGKILL to what is left of the group.
func StopGroup(pgid int, grace time.Duration, done <-chan struct{}) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // whatever is left in the group (none expected) goes too
}

// ExitStatus is the exit status with which a supervisor passes on its child's end, err of
// exec.Cmd.Wait: 0, the child's own status, or 128 plus the signal that killed it, as a shell
// reports it; 1 for an error that is no exit.
func ExitStatus(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}
