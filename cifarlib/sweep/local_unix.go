//go:build unix && !linux

package sweep

import "syscall"

// taskProcAttr puts a local task in a process group of its own: a terminal's Ctrl-C reaches it
// once, through the sweep.
func taskProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
