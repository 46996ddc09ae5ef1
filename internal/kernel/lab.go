package kernel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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

// DefaultLabPort is JupyterLab's usual port.
const DefaultLabPort = 8888

// LabOptions configure StartLab.
type LabOptions struct {
	// Repo is the checkout whose notebooks/ is served and whose kernels are installed.
	Repo Repo
	// Jupyter is the installation to run (findJupyter when zero).
	Jupyter jupyter
	// Notebooks is the folder JupyterLab opens (default REPO/notebooks).
	Notebooks string
	// IP is the address to bind (default 127.0.0.1).
	IP string
	// Port is the port to listen on; 0 picks a free one.
	Port int
	// NoToken turns token authentication off. Token sets the token (default: random).
	NoToken bool
	Token   string
	// DataDir, when set, is passed to the server as JUPYTER_DATA_DIR (and the kernels are
	// installed there when missing).
	DataDir string
	// Log receives the server's output (nil: discarded) and Progress the steps (nil: discarded).
	// With LogDir, Log receives only the errors a user must see (see labLog).
	Log, Progress io.Writer
	// LogDir, when set, is where the server's whole output, its kernels' included, is written,
	// without terminal colour codes: LogDir/lab-PORT.log (Lab.LogFile), created or emptied at
	// the start.
	LogDir string
	// StartTimeout bounds the wait for the server to answer (default 3 minutes).
	StartTimeout time.Duration
}

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
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// kernelsReady reports whether Jupyter lists both cifarlab kernels, each running an
// existing gonb, compiling against repo, with the cells' module proxy of this go command
// (cellGoProxy).
func kernelsReady(ctx context.Context, jup jupyter, repo Repo, dataDir string) (bool, error) {
	var env []string
	if dataDir != "" {
		env = append(env, dataDirEnv(dataDir)...)
	}
	specs, err := jup.KernelSpecs(ctx, env...)
	if err != nil {
		return false, err
	}
	gt, _ := findGoTools(ctx, repo)
	for _, name := range []string{CPUKernel, CUDAKernel} {
		if c := checkKernelSpec(repo, name, specs, gt); c.Status != StatusOK {
			return false, nil
		}
	}
	return true, nil
}

// StartLab installs the kernels if Jupyter does not list them, starts `jupyter lab` in its
// own process group bound to opts.IP with token authentication (unless NoToken), and
// waits until the server answers. Stop it with Lab.Stop.
func StartLab(ctx context.Context, opts LabOptions) (*Lab, error) {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	if opts.Jupyter.Bin == "" {
		j, err := findJupyter(opts.Repo)
		if err != nil {
			return nil, err
		}
		opts.Jupyter = j
	}
	if vs, err := opts.Jupyter.Versions(ctx); err != nil || vs["jupyterlab"] == "" {
		return nil, fmt.Errorf("JupyterLab is not installed next to %s: %s", opts.Jupyter.Bin, installHint)
	}
	if opts.Notebooks == "" {
		opts.Notebooks = opts.Repo.notebooksDir()
	}
	nbDir, err := filepath.Abs(opts.Notebooks)
	if err != nil {
		return nil, err
	}
	if !dirExists(nbDir) {
		return nil, fmt.Errorf("notebook folder %s does not exist: pass --notebooks DIR", nbDir)
	}
	if opts.IP == "" {
		opts.IP = "127.0.0.1"
	}
	if opts.Port == 0 {
		p, err := freePort(opts.IP)
		if err != nil {
			return nil, err
		}
		opts.Port = p
	} else if l, err := net.Listen("tcp", net.JoinHostPort(opts.IP, strconv.Itoa(opts.Port))); err != nil {
		return nil, fmt.Errorf("port %d on %s is not free (%v): pick another with --port N, or --port 0 for any free port", opts.Port, opts.IP, err)
	} else {
		l.Close()
	}
	token := ""
	if !opts.NoToken {
		token = opts.Token
		if token == "" {
			var b [24]byte
			if _, err := rand.Read(b[:]); err != nil {
				return nil, err
			}
			token = hex.EncodeToString(b[:])
		}
	}

	lab := &Lab{Token: token, Port: opts.Port, Notebooks: nbDir, done: make(chan struct{})}
	ready, err := kernelsReady(ctx, opts.Jupyter, opts.Repo, opts.DataDir)
	if err != nil {
		return nil, err
	}
	if !ready {
		dataDir, why := opts.DataDir, "--jupyter-data-dir"
		if dataDir == "" {
			if dataDir, why, err = DefaultDataDir(opts.Repo); err != nil {
				return nil, err
			}
		}
		fmt.Fprintf(progress, "installing the cifarlab kernels into %s (%s)\n", dataDir, why)
		if _, err := Install(ctx, InstallOptions{Repo: opts.Repo, DataDir: dataDir, Log: progress}); err != nil {
			return nil, fmt.Errorf("installing the kernels: %w", err)
		}
		lab.KernelsInstalled = true
	}

	var env []string
	if opts.DataDir != "" {
		env = append(env, dataDirEnv(opts.DataDir)...)
	}
	// Which checkout each kernel belongs to, as this server will start it.
	owners, err := kernelOwners(ctx, opts.Jupyter, env...)
	if err != nil {
		return nil, err
	}
	for _, o := range owners {
		line, ok, fix := o.Describe(opts.Repo)
		if ok {
			fmt.Fprintf(progress, "kernel %s\n", line)
		} else {
			fmt.Fprintf(progress, "WARNING: kernel %s\n  fix: %s\n", line, fix)
			lab.Warnings = append(lab.Warnings, line+"; fix: "+fix)
		}
	}
	args := []string{"lab", "--no-browser",
		"--ip=" + opts.IP, "--port=" + strconv.Itoa(opts.Port), "--ServerApp.port_retries=0",
		"--ServerApp.root_dir=" + nbDir,
	}
	// The token travels in the environment, not on the command line where ps shows it.
	env = append(env, "JUPYTER_TOKEN="+token)
	if token == "" {
		args = append(args, "--IdentityProvider.token=")
	}
	if os.Geteuid() == 0 {
		args = append(args, "--allow-root") // containers and CI run as root
	}
	// The server outlives no one: it gets its own process group (so a terminal's Ctrl-C
	// reaches only cifarlab, which stops it) and SIGTERM if cifarlab dies.
	cmd := opts.Jupyter.Command(context.Background(), env, args...)
	cmd.Dir = nbDir
	cmd.SysProcAttr = proctree.Group(syscall.SIGTERM)
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	var split *labLog
	var logFile *os.File
	if opts.LogDir != "" {
		if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
			return nil, fmt.Errorf("the lab's log folder: %w", err)
		}
		lab.LogFile = filepath.Join(opts.LogDir, fmt.Sprintf("lab-%d.log", opts.Port))
		if logFile, err = os.OpenFile(lab.LogFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
			return nil, fmt.Errorf("the lab's log: %w", err)
		}
		split = newLabLog(logFile, logw)
		logw = split
	}
	tail := &tailBuffer{max: 4096}
	cmd.Stdout = io.MultiWriter(logw, tail)
	cmd.Stderr = io.MultiWriter(logw, tail)
	if err := cmd.Start(); err != nil {
		if logFile != nil {
			logFile.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", opts.Jupyter.Bin, err)
	}
	lab.cmd, lab.Pid = cmd, cmd.Process.Pid
	go func() {
		lab.waitErr = cmd.Wait()
		if split != nil {
			split.Close()
			logFile.Close()
		}
		close(lab.done)
	}()

	host := opts.IP
	if host == "0.0.0.0" || host == "::" || host == "" {
		host = "127.0.0.1"
	}
	lab.BaseURL = "http://" + net.JoinHostPort(host, strconv.Itoa(opts.Port)) + "/"
	lab.URL = lab.BaseURL + "lab"
	if token != "" {
		lab.URL += "?token=" + token
	}

	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 3 * time.Minute
	}
	deadline := time.Now().Add(timeout)
	status := lab.BaseURL + "api/status"
	if token != "" {
		status += "?token=" + token
	}
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		select {
		case <-lab.done:
			return nil, fmt.Errorf("jupyter lab exited before answering (%v); its last output:\n%s", lab.waitErr, tail.String())
		case <-ctx.Done():
			lab.Stop(10 * time.Second)
			return nil, ctx.Err()
		default:
		}
		if resp, err := client.Get(status); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return lab, nil
			}
		}
		if time.Now().After(deadline) {
			lab.Stop(10 * time.Second)
			return nil, fmt.Errorf("jupyter lab did not answer on %s within %s; its last output:\n%s", lab.BaseURL, timeout, tail.String())
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

// freePort returns a TCP port that is free on ip right now.
func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
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
