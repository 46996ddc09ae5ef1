package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cifarlab/cifarlab/internal/kernel"
)

func init() {
	register(command{
		name:    "lab",
		summary: "start JupyterLab on notebooks/ with the cifarlab kernels (127.0.0.1, token auth)",
		run:     runLab,
	})
}

func runLab(args []string, stdout io.Writer) error {
	fs := newFlagSet("lab", "[--port N] [--ip 127.0.0.1] [--no-token] [--notebooks DIR]", stdout)
	port := fs.Int("port", kernel.DefaultLabPort, "port to listen on (0: any free port)")
	ip := fs.String("ip", "127.0.0.1", "address to bind; anything but 127.0.0.1 exposes the lab to the network")
	noToken := fs.Bool("no-token", false, "turn token authentication off (only for a trusted, local machine)")
	token := fs.String("token", "", "use this token instead of a random one")
	notebooks := fs.String("notebooks", "", "folder to open (default REPO/notebooks)")
	dataDir := fs.String("jupyter-data-dir", "", "Jupyter data `DIR` for the server and the kernels (default: the kernels go where `cifarlab kernel install` puts them, the checkout's venv)")
	repoDir := fs.String("repo", "", "the cifarlab checkout (default: found from the working directory or the binary)")
	quiet := fs.Bool("quiet", false, "do not show the server's errors either (they stay in the log)")
	logDir := fs.String("log-dir", "", "write the server's and the kernels' messages to `DIR`/lab-PORT.log (default REPO/out); "+
		"the terminal shows only their errors")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *noToken && *token != "" {
		return &exitError{code: 2, err: errors.New("--no-token and --token exclude each other")}
	}
	repo, err := kernel.FindRepo(*repoDir)
	if err != nil {
		return err
	}
	opts := kernel.LabOptions{
		Repo: repo, Notebooks: *notebooks, IP: *ip, Port: *port, NoToken: *noToken, Token: *token,
		Progress: stdout,
	}
	if *dataDir != "" {
		if opts.DataDir, err = filepath.Abs(*dataDir); err != nil {
			return err
		}
	}
	if !*quiet {
		opts.Log = os.Stderr
	}
	opts.LogDir = *logDir
	if opts.LogDir == "" {
		opts.LogDir = filepath.Join(repo.Dir, "out")
	}
	return serveLab(stdout, opts)
}

// serveLab starts JupyterLab (kernel.StartLab), says where it serves and what to mind, and
// serves until Ctrl-C, SIGTERM or SIGHUP stops it, or it exits.
func serveLab(stdout io.Writer, opts kernel.LabOptions) error {
	// Ctrl-C and SIGTERM stop the server; it runs in its own process group.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	lab, err := kernel.StartLab(ctx, opts)
	if err != nil {
		if errors.Is(err, kernel.ErrNoJupyter) {
			return fmt.Errorf("JupyterLab is missing: %w", err)
		}
		return err
	}
	fmt.Fprintf(stdout, "JupyterLab (pid %d) is serving %s\n", lab.Pid, lab.Notebooks)
	fmt.Fprintf(stdout, "open: %s\n", lab.URL)
	fmt.Fprintf(stdout, "log: %s (JupyterLab's and the kernels' messages; their errors also show here)\n", lab.LogFile)
	if opts.IP != "127.0.0.1" && opts.IP != "localhost" {
		fmt.Fprintf(stdout, "warning: bound to %s, reachable from other machines\n", opts.IP)
	}
	if opts.NoToken {
		fmt.Fprintln(stdout, "warning: token authentication is off")
	}
	fmt.Fprintln(stdout, "press Ctrl-C to stop")
	select {
	case <-ctx.Done():
		fmt.Fprintln(stdout, "stopping JupyterLab")
		lab.Stop(15 * time.Second)
		return nil
	case <-lab.Done():
		return fmt.Errorf("JupyterLab exited: %v", lab.Err())
	}
}
