package labproc

import (
	"cmp"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cifarlab/cifarlab/internal/proctree"
)

// DefaultIdle is how long a lab process waits for a cell before it ends (IdleEnv).
const DefaultIdle = 30 * time.Minute

// RestLevel says how long a lab process has been without a request (Server.Rest).
type RestLevel int

// The rest levels, in the order they come.
const (
	// Release: ReleaseAfter without a request: what the last one freed goes back to the system.
	Release RestLevel = iota + 1
	// Drop: TrimAfter without a request: what can be made again is let go.
	Drop
)

// ReleaseAfter is when Rest(Release) comes after a request ends: soon, since it costs only a
// garbage collection, but not between two cells run one after the other.
const ReleaseAfter = 5 * time.Second

// DefaultTrimAfter is when Rest(Drop) comes (TrimEnv sets another).
const DefaultTrimAfter = 10 * time.Minute

// pollEvery is how often the lab process looks for its kernel.
const pollEvery = time.Second

// Handler serves one request: what it prints goes to out (an io.Writer; Display for rich
// output), and ctx ends when the cell is interrupted or gone. The payload reaches the cell
// with the error, if any (an interrupted run has both).
type Handler func(ctx context.Context, req *Request, out *Stream) (payload []byte, err error)

// Server is a lab process's side of the socket.
type Server struct {
	// Socket is where it listens; Fingerprint and Backend what it serves (a request of other
	// ones is refused, and the server ends).
	Socket, Fingerprint, Backend string
	// Idle is how long it waits for a request before it ends (DefaultIdle when 0).
	Idle time.Duration
	// Alive reports whether the kernel is still there; the server ends when it says no
	// (checked every second). Nil: always.
	Alive func() bool
	// Handle serves the requests, one at a time.
	Handle Handler
	// WireError turns a request's error into the Error the cell gets (its text only, when nil).
	WireError func(error) *Error
	// Waiting says, in one line for the cell, what a request that must wait for the one in
	// flight waits for (a cell interrupted earlier whose run is still saving); nil or "": it
	// waits without a word.
	Waiting func() string
	// Rest is called, with no request in flight, once every rest period passes without a request
	// since the last one ended: with Release after ReleaseAfter (give back to the system what the
	// last request freed), then with Drop after TrimAfter (let go of what a later cell may need
	// but can make again: loaded runs, data). Nil: nothing.
	Rest func(RestLevel)
	// TrimAfter is when Rest(Drop) comes (DefaultTrimAfter when 0).
	TrimAfter time.Duration
	rested    RestLevel // the last Rest level called since the last request

	mu       sync.Mutex // one request at a time
	active   sync.WaitGroup
	lastMu   sync.Mutex
	last     time.Time
	busy     int
	listener net.Listener
	stop     chan string
	stopOnce sync.Once
	// base is the parent of every request's context: cancelled when the process is told to end.
	base       context.Context
	cancelBase context.CancelFunc
}

// Serve listens on Socket and serves requests until the kernel goes, Idle passes without one,
// a cell of other code or another backend asks, or SIGTERM or SIGHUP comes (the kernel's
// supervisor ends the kernel's processes so; the request in flight is cancelled, as an
// interrupt: a Fit saves its checkpoint); then it waits for the request in flight and returns
// why it ended. The socket is removed when it ends.
func (s *Server) Serve() (reason string, err error) {
	l, err := net.Listen("unix", s.Socket)
	if err != nil {
		return "", fmt.Errorf("labproc: listening on %s: %w", s.Socket, err)
	}
	if err := os.Chmod(s.Socket, 0o600); err != nil {
		l.Close()
		return "", fmt.Errorf("labproc: %w", err)
	}
	s.listener, s.stop, s.last = l, make(chan string, 1), time.Now()
	s.base, s.cancelBase = context.WithCancel(context.Background())
	defer s.cancelBase()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() { // told to end (the kernel's supervisor, a shutdown): the request in flight stops as interrupted
		if sig, ok := <-sigs; ok {
			s.cancelBase()
			s.end("signal: " + sig.String())
		}
	}()
	if s.Idle <= 0 {
		s.Idle = DefaultIdle
	}
	go s.watch()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				s.end("the socket closed: " + err.Error())
				return
			}
			s.active.Add(1)
			go func() {
				defer s.active.Done()
				s.serve(c)
			}()
		}
	}()
	reason = <-s.stop
	s.active.Wait()
	return reason, nil
}

// end stops accepting (the listener's Close removes the socket, so that a new lab process can
// take its place) and makes Serve return reason once the request in flight is done.
func (s *Server) end(reason string) {
	s.stopOnce.Do(func() {
		s.listener.Close()
		s.stop <- reason
	})
}

func (s *Server) watch() {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for range t.C {
		if s.Alive != nil && !s.Alive() {
			s.end("the kernel is gone")
			return
		}
		s.lastMu.Lock()
		quiet := time.Duration(-1)
		if s.busy == 0 {
			quiet = time.Since(s.last)
		}
		var rest RestLevel
		switch trim := cmp.Or(s.TrimAfter, DefaultTrimAfter); {
		case quiet >= trim && s.rested < Drop:
			rest = Drop
		case quiet >= ReleaseAfter && s.rested < Release:
			rest = Release
		}
		if rest != 0 {
			s.rested = rest
		}
		s.lastMu.Unlock()
		if quiet > s.Idle {
			s.end(fmt.Sprintf("idle for %v", s.Idle))
			return
		}
		if rest != 0 && s.Rest != nil {
			s.Rest(rest)
		}
	}
}

func (s *Server) touch(delta int) {
	s.lastMu.Lock()
	s.busy += delta
	s.last = time.Now()
	s.rested = 0
	s.lastMu.Unlock()
}

func (s *Server) serve(c net.Conn) {
	defer c.Close()
	s.touch(1)
	defer s.touch(-1)
	dec := gob.NewDecoder(c)
	out := NewStream(c)
	var req Request
	if err := dec.Decode(&req); err != nil {
		return
	}
	if why := s.refuse(&req); why != "" {
		s.end(why) // first, so that the socket is free when the cell starts the next process
		_ = out.Send(&Message{Kind: KindRefused, Text: why})
		return
	}
	ctx, cancel := context.WithCancel(s.base)
	defer cancel()
	go func() { // a cancel from the cell, or the cell gone (GoNB killed it): stop the request
		var m Message
		for dec.Decode(&m) == nil && m.Kind != KindCancel {
		}
		cancel()
	}()
	if !s.mu.TryLock() {
		if s.Waiting != nil {
			if why := s.Waiting(); why != "" {
				_ = out.Send(&Message{Kind: KindText, Text: why + "\n"})
			}
		}
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if ctx.Err() != nil { // the cell left (or was interrupted) while it waited: nothing of it runs
		_ = out.Send(&Message{Kind: KindResult, Err: &Error{Text: "labproc: the cell was interrupted before its request started"}})
		return
	}
	payload, err := s.Handle(ctx, &req, out)
	res := &Message{Kind: KindResult, Payload: payload}
	if err != nil {
		if s.WireError != nil {
			res.Err = s.WireError(err)
		} else {
			res.Err = &Error{Text: err.Error()}
		}
	}
	_ = out.Send(res)
}

// refuse says why this process cannot serve req ("" when it can).
func (s *Server) refuse(req *Request) string {
	switch {
	case req.Fingerprint != s.Fingerprint:
		return "the library code changed since it started"
	case req.Backend != s.Backend:
		return fmt.Sprintf("it runs another backend (%s; the cell's: %s)", s.Backend, req.Backend)
	}
	return ""
}

// BackendKey is what selects a process's backend in its environment: a lab process serves the
// cells of the same one only, never a silently different backend.
func BackendKey() string {
	var parts []string
	for _, name := range []string{"GOMLX_BACKEND", "PJRT_PLUGIN_LIBRARY_PATH", "XLA_FLAGS", "CUDA_VISIBLE_DEVICES", "CIFARLAB_XLA_CPU_PLUGIN", "CIFARLAB_CPU_PLUGIN", "CIFARLAB_CUDA_SITE"} {
		if v, ok := os.LookupEnv(name); ok {
			parts = append(parts, name+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

// ServeFromEnv runs the lab process of a cell's binary started by Start (ServeEnv set): it
// serves with handle (see Server for wireError and waiting) until its kernel goes, it is idle for $CIFARLAB_LAB_IDLE, or a cell of
// other code or backend asks, and returns why it ended. The socket and the pid file are
// removed at the end.
func ServeFromEnv(handle Handler, wireError func(error) *Error, waiting func() string, rest func(RestLevel)) (string, error) {
	socket := os.Getenv(ServeEnv)
	idle, err := envDuration(IdleEnv, DefaultIdle)
	if err != nil {
		return "", err
	}
	trim, err := envDuration(TrimEnv, DefaultTrimAfter)
	if err != nil {
		return "", err
	}
	pid, _ := strconv.Atoi(os.Getenv(kernelPIDEnv))
	start, _ := strconv.ParseUint(os.Getenv(kernelStartEnv), 10, 64)
	kernel := proctree.Proc{Pid: pid, Start: start} // the pid and start time name it, even after the pid is reused
	gonbTmp := os.Getenv(GoNBTmpEnv)
	folder := strings.TrimSuffix(socket, "/lab.sock")
	s := &Server{Socket: socket, Fingerprint: os.Getenv(fingerprintEnv), Backend: BackendKey(), Idle: idle,
		Handle: handle, WireError: wireError, Waiting: waiting, Rest: rest, TrimAfter: trim,
		Alive: func() bool {
			if _, err := os.Stat(gonbTmp); gonbTmp != "" && err != nil {
				return false
			}
			return pid <= 0 || kernel.Alive()
		}}
	if err := os.WriteFile(pidPath(folder), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("labproc: %w", err)
	}
	defer func() {
		if b, err := os.ReadFile(pidPath(folder)); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid()) {
			os.Remove(pidPath(folder))
		}
	}()
	return s.Serve()
}

// envDuration is the duration in the variable name, else def.
func envDuration(name string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("labproc: $%s=%q: use a duration such as 30m or 90s", name, v)
	}
	return d, nil
}

// ErrNotStarted is what Client.Do returns when the lab process could not be started.
var ErrNotStarted = errors.New("labproc: the lab process did not start")
