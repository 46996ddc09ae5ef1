package main

// The lazy gopls: GoNB starts `gopls -listen unix;SOCKET` with every kernel and connects to it
// (goplsclient: an "initialize" call, the "initialized" notification), but it asks gopls
// something only when a cell asks for a completion or an inspection (Tab, Shift-Tab), after
// notifying it of the cell's files. A kernel opened only to read a notebook never does, yet its
// gopls loads the workspace: 130-374 MB per kernel. The kernel supervisor puts this program
// first on GoNB's PATH under the name gopls: it listens on GoNB's socket itself, answers the
// handshake, keeps the notifications, and starts the real gopls (on stdin and stdout) only at
// the first request, to which it replays the handshake and the notifications before it passes
// the request on; from then on it copies bytes both ways.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

const (
	// RealGoplsEnv names the real gopls for the lazy one (set by the supervisor).
	RealGoplsEnv = "CIFARLAB_REAL_GOPLS"
	// LazyGoplsEnv turns the lazy gopls off when "0": GoNB then starts the real one with the
	// kernel, as without the supervisor.
	LazyGoplsEnv = "CIFARLAB_LAZY_GOPLS"
)

// setUpLazyGopls makes a folder holding a link named gopls to this program, for the front of
// the kernel's PATH, and returns it with the environment that names the real gopls; "" when the
// lazy gopls is off or no gopls is on PATH (GoNB then does without, as before).
func setUpLazyGopls(env []string) (dir string, newEnv []string, err error) {
	if os.Getenv(LazyGoplsEnv) == "0" {
		return "", env, nil
	}
	real, err := exec.LookPath("gopls")
	if err != nil {
		return "", env, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", env, err
	}
	dir, err = os.MkdirTemp("", "cifarlab-kernel-gopls-")
	if err != nil {
		return "", env, err
	}
	if err := os.Symlink(self, filepath.Join(dir, "gopls")); err != nil {
		os.RemoveAll(dir)
		return "", env, err
	}
	newEnv = make([]string, 0, len(env)+2)
	for _, kv := range env {
		if name, value, _ := strings.Cut(kv, "="); name == "PATH" {
			kv = "PATH=" + dir + string(os.PathListSeparator) + value
		}
		newEnv = append(newEnv, kv)
	}
	if os.Getenv("PATH") == "" {
		newEnv = append(newEnv, "PATH="+dir)
	}
	return dir, append(newEnv, RealGoplsEnv+"="+real), nil
}

// lazyGopls runs as gopls: `-listen unix;SOCKET` (how GoNB starts it) is served lazily; any
// other command line runs the real gopls.
func lazyGopls(args []string) int {
	real := os.Getenv(RealGoplsEnv)
	if real == "" {
		fmt.Fprintf(os.Stderr, "cifarlab-kernel (as gopls): $%s is not set\n", RealGoplsEnv)
		return 2
	}
	if len(args) != 2 || args[0] != "-listen" || !strings.HasPrefix(args[1], "unix;") {
		err := syscall.Exec(real, append([]string{real}, args...), os.Environ())
		fmt.Fprintf(os.Stderr, "cifarlab-kernel (as gopls): running %s: %v\n", real, err)
		return 1
	}
	socket := strings.TrimPrefix(args[1], "unix;")
	l, err := net.Listen("unix", socket)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cifarlab-kernel (as gopls): %v\n", err)
		return 1
	}
	defer l.Close()
	for {
		conn, err := l.Accept()
		if err != nil {
			return 0
		}
		go func() {
			defer conn.Close()
			if err := serveLazily(conn, real); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				fmt.Fprintf(os.Stderr, "cifarlab-kernel (as gopls): %v\n", err)
			}
		}()
	}
}

// lspMessage is one JSON-RPC message: its bytes as framed (headers and body) and its body's
// id and method.
type lspMessage struct {
	raw    []byte
	id     json.RawMessage
	method string
}

// readLSP reads one framed message.
func readLSP(r *bufio.Reader) (*lspMessage, error) {
	tp := textproto.NewReader(r)
	header, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(header.Get("Content-Length"))
	if err != nil || n < 0 {
		return nil, fmt.Errorf("a message without a valid Content-Length: %q", header.Get("Content-Length"))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return nil, fmt.Errorf("a message that is not JSON: %w", err)
	}
	return &lspMessage{raw: frame(body), id: head.ID, method: head.Method}, nil
}

// frame frames body as a message.
func frame(body []byte) []byte {
	return append([]byte("Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"), body...)
}

// reply frames the result of the request id.
func reply(id json.RawMessage, result string) []byte {
	return frame([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`))
}

// serveLazily serves GoNB's connection: the handshake and the notifications here, until the
// first request, then through the real gopls.
func serveLazily(conn net.Conn, real string) error {
	in := bufio.NewReader(conn)
	var kept [][]byte // the initialize request and the notifications, to replay
	var initID json.RawMessage
	for {
		m, err := readLSP(in)
		if err != nil {
			return err
		}
		switch {
		case m.method == "initialize":
			initID, kept = m.id, append(kept, m.raw)
			if _, err := conn.Write(reply(m.id, `{"capabilities":{}}`)); err != nil {
				return err
			}
		case m.method == "shutdown":
			if _, err := conn.Write(reply(m.id, "null")); err != nil {
				return err
			}
		case m.method == "exit":
			return nil
		case len(m.id) == 0 || string(m.id) == "null": // a notification
			kept = append(kept, m.raw)
		default: // the first request: gopls now
			return proxyToGopls(conn, in, real, initID, append(kept, m.raw))
		}
	}
}

// proxyToGopls starts the real gopls on stdin and stdout, sends it the messages kept (the
// answer to the replayed initialize, which GoNB had from us, is dropped), and then copies both
// ways until either side ends; gopls ends with the connection (its stdin closed), and with
// this process (a parent-death signal).
func proxyToGopls(conn net.Conn, in *bufio.Reader, real string, initID json.RawMessage, kept [][]byte) error {
	cmd := exec.Command(real, "serve")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	started, exited := make(chan error, 1), make(chan error, 1)
	go func() { // the parent-death signal fires when the thread that started gopls ends: keep it
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("starting %s: %w", real, err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		<-exited
	}()
	out := bufio.NewReader(stdout)
	for i, m := range kept {
		if _, err := stdin.Write(m); err != nil {
			return err
		}
		if i == 0 && initID != nil { // wait for gopls's answer to initialize, which GoNB had already
			for {
				r, err := readLSP(out)
				if err != nil {
					return err
				}
				if r.method == "" && bytes.Equal(r.id, initID) {
					break
				}
				if _, err := conn.Write(r.raw); err != nil {
					return err
				}
			}
		}
	}
	done := make(chan error, 2)
	go func() { _, err := io.Copy(conn, out); done <- err }()
	go func() { _, err := io.Copy(stdin, in); done <- err }()
	return <-done
}
