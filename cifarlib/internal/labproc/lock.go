package labproc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// LockedError is returned by Lock when another process holds the lock.
type LockedError struct {
	// Path is the lock file, PID the process that holds it (0 when unknown).
	Path string
	PID  int
}

// Error implements error.
func (e *LockedError) Error() string {
	return fmt.Sprintf("labproc: %s is held by process %d", e.Path, e.PID)
}

// Lock takes an exclusive lock on the file path (flock, created 0600), without waiting, and
// writes this process's id into it. The lock ends with unlock, or with the process: a process
// killed holds nothing. A second Lock of the same path, from this process or another, is a
// *LockedError until then.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("labproc: lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid := 0
		if b, rerr := os.ReadFile(path); rerr == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Path: path, PID: pid}
		}
		return nil, fmt.Errorf("labproc: lock %s: %w", path, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() { _ = f.Close() }, nil
}
