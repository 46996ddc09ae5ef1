//go:build unix && !linux

package proctree

import "syscall"

func groupAttr(syscall.Signal) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
