package tfevents

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// FilePrefix starts the name of every event file; TensorBoard reads the files of a folder whose
// names contain "tfevents", in name order.
const FilePrefix = "events.out.tfevents."

// Writer appends events to one new event file. Each event is framed and written with one
// write(2) on a file opened for appending, so a process that dies mid-run leaves every event
// written before intact; a machine crash can at worst tear the last record, which TensorBoard's
// reader skips. Close makes what was written durable. A Writer is not safe for concurrent use.
type Writer struct {
	f    *os.File
	path string
	size int64 // bytes of whole records written
	err  error // the first write error: the file is not written again after it
}

var fileSeq atomic.Int64

// Create starts a new event file in dir (which must exist), named as TensorBoard's writers name
// theirs (events.out.tfevents.<seconds>.<host>.<pid>.<n>), and writes its file-version event.
func Create(dir string) (*Writer, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	host = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, host)
	now := time.Now()
	name := fmt.Sprintf("%s%010d.%s.%d.%d", FilePrefix, now.Unix(), host, os.Getpid(), fileSeq.Add(1))
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("tfevents: creating the TensorBoard event file: %w", err)
	}
	w := &Writer{f: f, path: path}
	if err := w.write(fileVersionEvent(now)); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, err
	}
	return w, nil
}

// Path is the event file's path.
func (w *Writer) Path() string { return w.path }

// Scalars writes one event at step with every value of values, stamped with the current time.
func (w *Writer) Scalars(step int64, values ...Scalar) error {
	return w.write(summaryEvent(time.Now(), step, values))
}

// Start writes a SessionLog START event at step: TensorBoard then discards the points at step
// and beyond read before it (from this file or earlier ones of the folder), so a run resumed
// from an earlier checkpoint does not show the points it trains again twice.
func (w *Writer) Start(step int64) error { return w.write(sessionStartEvent(time.Now(), step)) }

// write appends event as one record. On a failed or short write the file is cut back to its
// last whole record and the Writer refuses further writes with the same error.
func (w *Writer) write(event []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.f == nil {
		return fmt.Errorf("tfevents: %s: write after Close", w.path)
	}
	rec := appendRecord(nil, event)
	n, err := w.f.Write(rec)
	if err == nil && n != len(rec) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(rec))
	}
	if err != nil {
		_ = w.f.Truncate(w.size)
		w.err = fmt.Errorf("tfevents: writing %s: %w (TensorBoard gets no more points of this run)", w.path, err)
		return w.err
	}
	w.size += int64(n)
	return nil
}

// Close syncs and closes the file; it returns the first write error, if any.
func (w *Writer) Close() error {
	if w.f == nil {
		return w.err
	}
	serr := w.f.Sync()
	cerr := w.f.Close()
	w.f = nil
	if err := errors.Join(serr, cerr); err != nil {
		return fmt.Errorf("tfevents: closing %s: %w", w.path, err)
	}
	return w.err
}
