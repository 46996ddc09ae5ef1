package kernel

import (
	"bytes"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// labLog takes what `jupyter lab` and its kernels print (the kernels inherit the server's
// output) and splits it: every line goes to the log file, without terminal colour codes; only
// the errors a user must see go to the terminal, whole (an error's traceback with it). Jupyter's
// log entries start "[L yyyy-mm-dd hh:mm:ss.mmm Name] " and GoNB's (klog) "Lmmdd hh:mm:ss.uuuuuu
// PID file:line] ", L being the level; the lines after a header, up to the next, belong to its
// entry (a traceback, the goroutine dump GoNB prints on every shutdown after "killing gopls:").
//
// Shown: Jupyter's errors ([E]) and critical messages ([C]) but its start banner (cifarlab lab
// prints the URL itself) and those of a normal stop, a kernel that died (Jupyter's restarter's warning), GoNB's errors
// (E and F) but the ones every kernel prints when all is well (its logger's "Error message"
// self-test at each start, "Signal terminated triggers kernel stop." at each shutdown), and
// lines outside any entry that start a crash ("panic: ", "fatal error: ", a Python traceback), but
// GoNB v0.11.5's double-stop panic after a signal stopped it (gonbStopPanic).
// Everything else (Jupyter's info and warnings: extensions, kernels started and shut down,
// refused requests; GoNB's info and warnings) is only in the file.
type labLog struct {
	mu      sync.Mutex
	file    io.Writer // every line
	term    io.Writer // the errors
	part    []byte    // a line not yet ended
	started bool      // an entry has begun: a line without a header continues it
	show    bool      // the current entry goes to the terminal
	// held is true while the current entry is a [C] one, decided when it ends (its text comes
	// after the header): heldLines are its lines so far.
	held      bool
	heldLines []string
	lastWrite time.Time
	stop      chan struct{}
	// stopping: a GoNB kernel logged that it stops (gonbStopping); its double-stop panic that may
	// follow is routine (gonbStopPanic).
	stopping bool
}

var (
	ansiRE         = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)
	jupyterEntryRE = regexp.MustCompile(`^\[([DIWEC]) \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ [^\]]*\]`)
	klogEntryRE    = regexp.MustCompile(`^([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^ \]]+:\d+\] (.*)$`)
	crashRE        = regexp.MustCompile(`^(panic: |fatal error: |Traceback \(most recent call last\):)`)
)

// jupyterRoutineCritical are Jupyter's critical messages of a normal stop (cifarlab lab's
// Ctrl-C); its start banner is the other one.
var jupyterRoutineCritical = []string{"received signal", "Shutting down", "Shutdown confirmed", "To access the server"}

// gonbRoutineErrors are GoNB's error lines that every kernel prints when nothing is wrong.
var gonbRoutineErrors = []string{"Error message", "Signal terminated triggers kernel stop.", "Signal interrupt triggers kernel stop."}

// gonbStopping is GoNB's line when a signal stops it. gonbStopPanic is GoNB v0.11.5's crash
// when the shutdown_request it had not yet read is then handled too (its Kernel.Stop closes a
// channel twice): the kernel was ending anyway, and Jupyter had asked it to, so it is routine.
const (
	gonbStopping  = "triggers kernel stop."
	gonbStopPanic = "panic: close of closed channel"
)

// labLogFlushAfter is how long an entry the terminal may show waits for more lines before it is
// shown: a [C] entry's text comes on the lines after its header.
const labLogFlushAfter = 300 * time.Millisecond

// newLabLog returns a labLog writing to file and term; Close it when the server has exited.
func newLabLog(file, term io.Writer) *labLog {
	l := &labLog{file: file, term: term, stop: make(chan struct{})}
	go l.flushIdle()
	return l
}

// Write implements io.Writer.
func (l *labLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastWrite = time.Now()
	l.part = append(l.part, p...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			break
		}
		line := string(l.part[:i])
		l.part = l.part[i+1:]
		l.line(line)
	}
	return len(p), nil
}

// Close writes what is left and stops the idle flush.
func (l *labLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.part) > 0 {
		l.line(string(l.part))
		l.part = nil
	}
	l.endHeld()
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	return nil
}

// line takes one line (without its newline).
func (l *labLog) line(raw string) {
	line := strings.TrimRight(ansiRE.ReplaceAllString(raw, ""), "\r")
	_, _ = io.WriteString(l.file, line+"\n")
	if m := jupyterEntryRE.FindStringSubmatch(line); m != nil {
		l.endHeld()
		l.started, l.show = true, false
		switch m[1] {
		case "E":
			l.show = true
		case "C":
			l.held = true
		case "W": // a kernel that died and is restarted
			l.show = strings.Contains(line, "restarting kernel")
		}
	} else if m := klogEntryRE.FindStringSubmatch(line); m != nil {
		l.endHeld()
		l.started, l.show = true, (m[1] == "E" || m[1] == "F") && !routineGoNBError(m[2])
		l.stopping = l.stopping || strings.HasSuffix(m[2], gonbStopping)
	} else if crashRE.MatchString(line) {
		l.endHeld()
		l.started, l.show = true, !(l.stopping && line == gonbStopPanic)
	} else if !l.started {
		l.show = true // nothing to continue: it may be an error of the server's start
	}
	switch {
	case l.held:
		l.heldLines = append(l.heldLines, line)
	case l.show:
		_, _ = io.WriteString(l.term, line+"\n")
	}
}

// endHeld decides a held [C] entry: shown, but for Jupyter's routine ones; the lines that
// still follow it go the same way.
func (l *labLog) endHeld() {
	if !l.held {
		return
	}
	l.held = false
	text := strings.Join(l.heldLines, "\n")
	l.show = !slices.ContainsFunc(jupyterRoutineCritical, func(r string) bool { return strings.Contains(text, r) })
	if l.show {
		for _, line := range l.heldLines {
			_, _ = io.WriteString(l.term, line+"\n")
		}
	}
	l.heldLines = nil
}

// routineGoNBError reports whether a GoNB error line (its text after the klog header, colour
// codes removed) is one every kernel prints when all is well.
func routineGoNBError(text string) bool {
	// GoNB prefixes its messages with the kernel's id, e.g. "[33424eec] ".
	if strings.HasPrefix(text, "[") {
		if i := strings.Index(text, "] "); i > 0 {
			text = text[i+2:]
		}
	}
	for _, r := range gonbRoutineErrors {
		if text == r {
			return true
		}
	}
	return false
}

// flushIdle ends a held entry once no line came for labLogFlushAfter, so that an error is
// shown without waiting for the next entry.
func (l *labLog) flushIdle() {
	t := time.NewTicker(labLogFlushAfter / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		if l.held && time.Since(l.lastWrite) >= labLogFlushAfter {
			l.endHeld()
		}
		l.mu.Unlock()
	}
}
