package sweep

import "syscall"

// taskProcAttr puts a local task in a process group of its own (a terminal's Ctrl-C reaches it
// once, through the sweep) and has Linux send it SIGTERM when the sweep dies, so that no task
// outlives its sweep.
func taskProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
