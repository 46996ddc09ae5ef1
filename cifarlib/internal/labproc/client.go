package labproc

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cifarlab/cifarlab/internal/oomkill"
	"github.com/cifarlab/cifarlab/internal/proctree"
)

// StartTimeout is how long a cell waits for a new lab process to listen.
const StartTimeout = 2 * time.Minute

// DefaultGrace is how long Do waits for the lab process's result after the cell is interrupted
// (Client.Grace): GoNB kills a cell's program 5 s after it sends it SIGINT (its jpyexec.go,
// WaitToKill), so the cell leaves before that, with time to say why.
const DefaultGrace = 3 * time.Second

// Client is a cell's side of the socket.
type Client struct {
	// Folder is the lab process's folder (Folder); Fingerprint the cell's library code.
	Folder, Fingerprint string
	// Note receives the one-line notes of the lab process's life a user must know: that the
	// previous one died, or was left for a new one (other code or backend).
	Note io.Writer
	// Grace is how long Do waits for the result once ctx has ended (DefaultGrace when 0).
	Grace time.Duration
}

// LeftError is returned by Do when the cell was interrupted and the lab process's result did
// not come within Client.Grace: the cell leaves before GoNB kills it, and the lab process goes
// on with the request until it can stop (a Fit finishes its step and saves its checkpoint).
type LeftError struct {
	// Stopping is the lab process's KindStopping message, nil when none came in time.
	Stopping *Message
}

// Error implements error.
func (e *LeftError) Error() string {
	if e.Stopping != nil && e.Stopping.Text != "" {
		return "labproc: " + e.Stopping.Text
	}
	return "labproc: interrupted; the lab process ends the request on its own"
}

// DiedError is returned by Do when the lab process ended during the request.
type DiedError struct {
	// PID is the lab process, Log its log file.
	PID int
	Log string
	// OOM says that memory ran out (the out-of-memory killer ended it); nil when not, or when
	// no memory cgroup tells (How says which).
	OOM *oomkill.Kill
	// How is how it ended, in words (endedHow): "was killed because memory ran out (limit
	// ...)", "ended (killed or crashed, not out of memory: see LOG)".
	How string
}

// Error implements error.
func (e *DiedError) Error() string {
	how := e.How
	if how == "" {
		how = fmt.Sprintf("ended (killed, or out of memory: see %s)", e.Log)
	}
	if e.OOM != nil {
		return fmt.Sprintf("labproc: the lab process (pid %d) was killed during the request because %s; what it saved is in the run folder. To go on, %s",
			e.PID, e.OOM, e.OOM.Advice())
	}
	return fmt.Sprintf("labproc: the lab process (pid %d) %s during the request; what it saved is in the run folder", e.PID, how)
}

// Do sends req to the kernel's lab process, starting one when there is none (or it cannot
// serve this cell: other code, another backend), and passes every message it streams back to
// each until the result, which it returns. When ctx ends (the cell is interrupted), the lab
// process is told to cancel, and Do still waits for its result. A lab process that ends
// before the result is a *DiedError.
func (c *Client) Do(ctx context.Context, req *Request, each func(*Message)) (*Message, error) {
	req.Fingerprint, req.Backend = c.Fingerprint, BackendKey()
	for attempt := 0; ; attempt++ {
		before := oomkill.Take()
		conn, pid, err := c.connect()
		if err != nil {
			return nil, err
		}
		res, refused, err := c.exchange(ctx, conn, req, each)
		conn.Close()
		if refused == "" || attempt > 0 {
			var wire *Error
			var left *LeftError
			if errors.As(err, &left) {
				return nil, left
			}
			if err != nil && !errors.As(err, &wire) {
				oom, how := endedHow(before, pid, LogPath(c.Folder))
				if oom != nil {
					cellMemoryTold(c.Folder)
				}
				return nil, &DiedError{PID: pid, Log: LogPath(c.Folder), OOM: oom, How: how}
			}
			markMemory(c.Folder)
			if refused != "" {
				return nil, fmt.Errorf("labproc: a new lab process refused the cell too: %s", refused)
			}
			return res, err
		}
		c.note("lab process: the running one (pid %d) cannot serve this cell: %s; starting a new one", pid, refused)
		waitGone(pid, 10*time.Second) // it ends once its request in flight is done
	}
}

func (c *Client) note(format string, args ...any) {
	if c.Note != nil {
		fmt.Fprintf(c.Note, format+"\n", args...)
	}
}

func (c *Client) exchange(ctx context.Context, conn net.Conn, req *Request, each func(*Message)) (res *Message, refused string, err error) {
	enc, dec := gob.NewEncoder(conn), gob.NewDecoder(conn)
	if err := enc.Encode(req); err != nil {
		return nil, "", err
	}
	done := make(chan struct{})
	defer close(done)
	var left atomic.Bool // the cell stopped waiting (Grace) and closed the connection
	go func() {
		select {
		case <-ctx.Done():
			_ = enc.Encode(&Message{Kind: KindCancel})
		case <-done:
			return
		}
		grace := c.Grace
		if grace <= 0 {
			grace = DefaultGrace
		}
		select {
		case <-time.After(grace):
			left.Store(true)
			conn.Close()
		case <-done:
		}
	}()
	var stopping *Message
	for {
		var m Message
		if err := dec.Decode(&m); err != nil {
			if left.Load() {
				return nil, "", &LeftError{Stopping: stopping}
			}
			return nil, "", err
		}
		switch m.Kind {
		case KindRefused:
			return nil, m.Text, nil
		case KindResult:
			if m.Err != nil {
				return &m, "", m.Err
			}
			return &m, "", nil
		case KindStopping:
			stopping = &m
		default:
			each(&m)
		}
	}
}

// connect returns a connection to the lab process and its pid, starting it if needed.
func (c *Client) connect() (net.Conn, int, error) {
	if conn, err := net.Dial("unix", SocketPath(c.Folder)); err == nil {
		return conn, readPID(c.Folder), nil
	}
	unlock, err := lockWait(filepath.Join(c.Folder, "start.lock"), StartTimeout)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	if conn, err := net.Dial("unix", SocketPath(c.Folder)); err == nil { // another cell started it
		return conn, readPID(c.Folder), nil
	}
	if pid := readPID(c.Folder); pid > 0 {
		// A pid file without a socket to answer: the process was killed (kill -9, out of
		// memory) before it could clean up.
		oom, how := endedHow(markedMemory(c.Folder), pid, LogPath(c.Folder))
		advice := ""
		if oom != nil {
			advice = "; to keep it alive, " + oom.Advice()
		}
		c.note("lab process: the previous one (pid %d) %s; starting a new one; nothing on disk is lost%s", pid, how, advice)
		os.Remove(pidPath(c.Folder))
	}
	os.Remove(SocketPath(c.Folder))
	pid, err := c.start()
	if err != nil {
		return nil, 0, err
	}
	conn, err := net.Dial("unix", SocketPath(c.Folder))
	if err != nil {
		return nil, 0, fmt.Errorf("labproc: %w", err)
	}
	return conn, pid, nil
}

// start runs this program's binary as the lab process: a link to it (or a copy) in Folder, so
// that GoNB's next build does not replace it, in a session of its own (GoNB's interrupt and
// kill of the cell do not reach it), its output in LogPath, and waits until it listens.
func (c *Client) start() (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("labproc: the cell's binary: %w", err)
	}
	bin := filepath.Join(c.Folder, "lab-server")
	os.Remove(bin)
	if err := os.Link(exe, bin); err != nil {
		if err := copyFile(exe, bin); err != nil {
			return 0, fmt.Errorf("labproc: copying the cell's binary: %w", err)
		}
	}
	log, err := os.OpenFile(LogPath(c.Folder), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("labproc: %w", err)
	}
	defer log.Close()
	kernel, err := proctree.Stat(os.Getppid()) // GoNB: the cell's parent
	if err != nil {
		return 0, fmt.Errorf("labproc: the kernel's process: %w", err)
	}
	cmd := exec.Command(bin)
	cmd.Dir = c.Folder
	cmd.Env = append(serverEnv(),
		ServeEnv+"="+SocketPath(c.Folder), fingerprintEnv+"="+c.Fingerprint,
		kernelPIDEnv+"="+strconv.Itoa(kernel.Pid), kernelStartEnv+"="+strconv.FormatUint(kernel.Start, 10))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = proctree.Session() // it outlives the cell: it ends with its kernel, or when idle
	markMemory(c.Folder)
	before := oomkill.Take()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("labproc: starting the lab process: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(StartTimeout)
	for {
		if conn, err := net.Dial("unix", SocketPath(c.Folder)); err == nil {
			conn.Close()
			return cmd.Process.Pid, nil
		}
		select {
		case err := <-exited:
			if oom := oomkill.Check(before, err); oom != nil {
				return 0, fmt.Errorf("%w: it was killed because %s; %s", ErrNotStarted, oom, oom.Advice())
			}
			return 0, fmt.Errorf("%w: it exited (%v): %s", ErrNotStarted, err, lastLine(LogPath(c.Folder)))
		case <-deadline:
			_ = cmd.Process.Kill()
			return 0, fmt.Errorf("%w: it did not listen within %v; its log: %s", ErrNotStarted, StartTimeout, LogPath(c.Folder))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// serverEnv is the cell's environment without GoNB's pipes (the lab process talks to cells
// through its socket only) and without the variables of an earlier lab process.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GONB_PIPE", "GONB_PIPE_BACK", ServeEnv, fingerprintEnv, kernelPIDEnv, kernelStartEnv:
			continue
		}
		env = append(env, kv)
	}
	return env
}

// PID returns the process id of the kernel's lab process as its pid file says (0: none).
func PID(folder string) int { return readPID(folder) }

func readPID(folder string) int {
	b, err := os.ReadFile(pidPath(folder))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// waitGone waits up to d for process pid to end.
func waitGone(pid int, d time.Duration) {
	for end := time.Now().Add(d); pid > 0 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
	}
}

// lockWait is Lock, waiting up to d for the holder to let go.
func lockWait(path string, d time.Duration) (func(), error) {
	for end := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		unlock, err := Lock(path)
		var locked *LockedError
		if !errors.As(err, &locked) || time.Now().After(end) {
			return unlock, err
		}
	}
}

// lastLine returns the last line of the log at path, and the path.
func lastLine(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return fmt.Sprintf("%q (its log: %s)", lines[len(lines)-1], path)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
