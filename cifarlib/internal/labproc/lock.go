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
	// Note is what the holder says it is doing (WriteNote), "" when it said nothing.
	Note string
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
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, lockedBy(path)
		}
		return nil, fmt.Errorf("labproc: lock %s: %w", path, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() { _ = f.Close() }, nil
}

// lockedBy reads who holds the lock at path: the pid on its first line, the note on its second.
func lockedBy(path string) *LockedError {
	e := &LockedError{Path: path}
	if b, err := os.ReadFile(path); err == nil {
		pid, note, _ := strings.Cut(string(b), "\n")
		e.PID, _ = strconv.Atoi(strings.TrimSpace(pid))
		e.Note = strings.TrimSpace(note)
	}
	return e
}

// Holder returns who holds the lock at path, or nil when no process does (or there is no such
// lock file); it takes nothing and creates nothing.
func Holder(path string) *LockedError {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return lockedBy(path)
		}
		return nil
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return nil
}

// WriteNote says, in the lock file at path that this process holds (Lock), what it is doing,
// for another process that finds it locked (LockedError.Note, Holder).
func WriteNote(path, note string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("labproc: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("labproc: %w", err)
	}
	_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"+strings.ReplaceAll(note, "\n", " ")+"\n"), 0)
	return err
}
