package kernel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"time"
)

// DefaultLabPort is JupyterLab's usual port.
const DefaultLabPort = 8888

// LabOptions configure StartLab.
type LabOptions struct {
	// Repo is the checkout whose notebooks/ is served and whose kernels are installed.
	Repo Repo
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

// StartLab installs the kernels if Jupyter does not list them, starts `jupyter lab` in its
// own process group bound to opts.IP with token authentication (unless NoToken), and
// waits until the server answers. Stop it with Lab.Stop.
//
// Its steps: find what to serve and where (findLab), ensure the kernels (ensureKernels, and
// say whose they are: ownerWarnings), start the server (Lab.start) and wait for its answer
// (Lab.waitReady).
func StartLab(ctx context.Context, opts LabOptions) (*Lab, error) {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	srv, err := findLab(ctx, opts)
	if err != nil {
		return nil, err
	}
	lab := &Lab{Token: srv.token, Port: srv.port, Notebooks: srv.notebooks, done: make(chan struct{})}
	if lab.KernelsInstalled, err = ensureKernels(ctx, srv.jup, opts.Repo, opts.DataDir, progress); err != nil {
		return nil, err
	}
	if lab.Warnings, err = ownerWarnings(ctx, srv.jup, opts.Repo, srv.env, progress); err != nil {
		return nil, err
	}
	if err := lab.start(srv, opts.Log, opts.LogDir); err != nil {
		return nil, err
	}
	if err := lab.waitReady(ctx, opts.StartTimeout); err != nil {
		return nil, err
	}
	return lab, nil
}

// findLab finds what StartLab starts: the Jupyter (findJupyter; it must have JupyterLab), the
// notebook folder (default REPO/notebooks), the address (127.0.0.1 by default; port 0 picks a
// free port, another port must be free) and the token (opts.Token, else a random one).
func findLab(ctx context.Context, opts LabOptions) (labServer, error) {
	jup, err := findJupyter(opts.Repo)
	if err != nil {
		return labServer{}, err
	}
	if vs, err := jup.Versions(ctx); err != nil || vs["jupyterlab"] == "" {
		return labServer{}, fmt.Errorf("JupyterLab is not installed next to %s: %s", jup.Bin, installHint)
	}
	srv := labServer{jup: jup, ip: opts.IP, notebooks: opts.Notebooks}
	if srv.notebooks == "" {
		srv.notebooks = opts.Repo.notebooksDir()
	}
	if srv.notebooks, err = filepath.Abs(srv.notebooks); err != nil {
		return labServer{}, err
	}
	if !dirExists(srv.notebooks) {
		return labServer{}, fmt.Errorf("notebook folder %s does not exist: pass --notebooks DIR", srv.notebooks)
	}
	if srv.ip == "" {
		srv.ip = "127.0.0.1"
	}
	if srv.port, err = labPort(srv.ip, opts.Port); err != nil {
		return labServer{}, err
	}
	if !opts.NoToken {
		if srv.token, err = labToken(opts.Token); err != nil {
			return labServer{}, err
		}
	}
	if opts.DataDir != "" {
		srv.env = dataDirEnv(opts.DataDir)
	}
	return srv, nil
}

// labPort is port when it is free on ip, else an error that says how to pick another; port 0
// is a free port.
func labPort(ip string, port int) (int, error) {
	if port == 0 {
		return freePort(ip)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return 0, fmt.Errorf("port %d on %s is not free (%v): pick another with --port N, or --port 0 for any free port", port, ip, err)
	}
	l.Close()
	return port, nil
}

// labToken is token, or a random one when it is empty.
func labToken(token string) (string, error) {
	if token != "" {
		return token, nil
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
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
