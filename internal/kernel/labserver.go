package kernel

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/cifarlab/cifarlab/internal/proctree"
)

// Lab is a running JupyterLab server.
type Lab struct {
	// URL opens JupyterLab, with the token when there is one.
	URL string
	// BaseURL is http://HOST:PORT/ and Token the token ("" with NoToken).
	BaseURL, Token string
	// Port is the port it listens on.
	Port int
	// Pid is the server's process id; the server leads its own process group.
	Pid int
	// Notebooks is the folder served.
	Notebooks string
	// KernelsInstalled is true when StartLab had to install the kernels.
	KernelsInstalled bool
	// Warnings are the kernels notebooks would start from another checkout, with the fix.
	Warnings []string
	// LogFile is the file of the server's output ("" without LabOptions.LogDir).
	LogFile string

	cmd      *exec.Cmd
	tail     *tailBuffer // the server's last output, for errors
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// labServer is what StartLab starts: the Jupyter that has JupyterLab, the folder it serves, the
// address it binds, its token ("" without one) and the environment of the server and of the
// kernel checks (dataDirEnv of LabOptions.DataDir, when given).
type labServer struct {
	jup       jupyter
	notebooks string
	ip        string
	port      int
	token     string
	env       []string
}

// start starts `jupyter lab` for srv in its own process group (so that a terminal's Ctrl-C
// reaches only cifarlab, which stops it; SIGTERM if cifarlab dies), with the token in its
// environment, not on the command line where ps shows it. Its output goes to logw and, with
// logDir, whole to LogDir/lab-PORT.log (serverOutput). It sets the lab's process and URLs.
func (l *Lab) start(srv labServer, logw io.Writer, logDir string) error {
	cmd := srv.jup.Command(context.Background(), append(srv.env, "JUPYTER_TOKEN="+srv.token), labArgs(srv)...)
	cmd.Dir = srv.notebooks
	cmd.SysProcAttr = proctree.Group(syscall.SIGTERM)
	out, err := l.openLog(logw, logDir)
	if err != nil {
		return err
	}
	l.tail = &tailBuffer{max: 4096}
	cmd.Stdout = io.MultiWriter(out.w, l.tail)
	cmd.Stderr = io.MultiWriter(out.w, l.tail)
	if err := cmd.Start(); err != nil {
		if out.file != nil {
			out.file.Close()
		}
		return fmt.Errorf("starting %s: %w", srv.jup.Bin, err)
	}
	l.cmd, l.Pid = cmd, cmd.Process.Pid
	go func() {
		l.waitErr = cmd.Wait()
		if out.split != nil {
			out.split.Close()
			out.file.Close()
		}
		close(l.done)
	}()
	host := srv.ip
	if host == "0.0.0.0" || host == "::" || host == "" {
		host = "127.0.0.1"
	}
	l.BaseURL = "http://" + net.JoinHostPort(host, strconv.Itoa(srv.port)) + "/"
	l.URL = l.BaseURL + "lab"
	if srv.token != "" {
		l.URL += "?token=" + srv.token
	}
	return nil
}

// labArgs are the arguments of `jupyter lab` for srv; root (containers and CI) needs
// --allow-root.
func labArgs(srv labServer) []string {
	args := []string{"lab", "--no-browser",
		"--ip=" + srv.ip, "--port=" + strconv.Itoa(srv.port), "--ServerApp.port_retries=0",
		"--ServerApp.root_dir=" + srv.notebooks,
	}
	if srv.token == "" {
		args = append(args, "--IdentityProvider.token=")
	}
	if os.Geteuid() == 0 {
		args = append(args, "--allow-root")
	}
	return args
}

// serverOutput is where the server's output goes: w, which is logw itself, or with a log folder
// a labLog (split) writing everything to file and the errors to logw.
type serverOutput struct {
	w     io.Writer
	split *labLog
	file  *os.File
}

// openLog opens the lab's output: logw (nil: discarded), or with logDir the labLog of
// LogDir/lab-PORT.log, created or emptied (Lab.LogFile).
func (l *Lab) openLog(logw io.Writer, logDir string) (serverOutput, error) {
	if logw == nil {
		logw = io.Discard
	}
	if logDir == "" {
		return serverOutput{w: logw}, nil
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return serverOutput{}, fmt.Errorf("the lab's log folder: %w", err)
	}
	l.LogFile = filepath.Join(logDir, fmt.Sprintf("lab-%d.log", l.Port))
	f, err := os.OpenFile(l.LogFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return serverOutput{}, fmt.Errorf("the lab's log: %w", err)
	}
	split := newLabLog(f, logw)
	return serverOutput{w: split, split: split, file: f}, nil
}

// waitReady polls the server's api/status until it answers (nil), it exits, ctx is done or
// timeout (default 3 minutes) passes; in the last two cases it stops the server. An error
// carries the server's last output.
func (l *Lab) waitReady(ctx context.Context, timeout time.Duration) error {
	if timeout == 0 {
		timeout = 3 * time.Minute
	}
	deadline := time.Now().Add(timeout)
	status := l.BaseURL + "api/status"
	if l.Token != "" {
		status += "?token=" + l.Token
	}
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		select {
		case <-l.done:
			return fmt.Errorf("jupyter lab exited before answering (%v); its last output:\n%s", l.waitErr, l.tail.String())
		case <-ctx.Done():
			l.Stop(10 * time.Second)
			return ctx.Err()
		default:
		}
		if resp, err := client.Get(status); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			l.Stop(10 * time.Second)
			return fmt.Errorf("jupyter lab did not answer on %s within %s; its last output:\n%s", l.BaseURL, timeout, l.tail.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Done is closed when the server has exited.
func (l *Lab) Done() <-chan struct{} { return l.done }

// Err is the server's exit error, valid after Done is closed.
func (l *Lab) Err() error { return l.waitErr }

// Stop sends SIGTERM to the server's process group, waits up to grace for it to exit, then
// kills the group. It returns when the server is gone.
func (l *Lab) Stop(grace time.Duration) {
	l.stopOnce.Do(func() { proctree.StopGroup(l.Pid, grace, l.done) })
	<-l.done
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
