package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/cifarlab/cifarlab/internal/kernel"
)

func init() {
	register(command{
		name:    "kernel",
		summary: "install or uninstall the GoNB kernelspecs \"Go (cifarlab, CPU)\" and \"Go (cifarlab, CUDA)\"",
		run:     runKernel,
	})
}

const kernelUsage = `usage: cifarlab kernel install [--user | --prefix DIR | --jupyter-data-dir DIR] [flags]
       cifarlab kernel uninstall [--user | --prefix DIR | --jupyter-data-dir DIR]

install builds the pinned gonb, goimports and gopls (tools/go.mod) into REPO/.bin when they
are missing or stale, and the kernel supervisor cifarlab-kernel, then writes the kernelspecs
cifarlab-cpu and cifarlab-cuda into a Jupyter data directory: --jupyter-data-dir DIR,
PREFIX/share/jupyter with --prefix, the user's with --user ($JUPYTER_DATA_DIR or
~/.local/share/jupyter, seen by every checkout's Jupyter); by default $JUPYTER_DATA_DIR when
set, else the share/jupyter of the checkout's venv (REPO/.venv), which only that venv's
Jupyter (the one cifarlab lab runs) sees, so each checkout's lab starts its own kernels.
Installing twice is harmless. uninstall removes exactly what install wrote there (it keeps a
manifest).
`

func runKernel(args []string, stdout io.Writer) error {
	if len(args) == 0 || (args[0] != "install" && args[0] != "uninstall") {
		fmt.Fprint(stdout, kernelUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return nil
		}
		return &exitError{code: 2, err: fmt.Errorf("expected a sub-command: install or uninstall")}
	}
	sub := args[0]
	fs := newFlagSet("kernel "+sub, "[flags]", stdout)
	user := fs.Bool("user", false, "install into the user's Jupyter data directory ($JUPYTER_DATA_DIR or ~/.local/share/jupyter), which every checkout's Jupyter sees")
	prefix := fs.String("prefix", "", "install into `DIR`/share/jupyter (e.g. a venv or /usr/local)")
	dataDir := fs.String("jupyter-data-dir", "", "install into this Jupyter data `DIR` (kernelspecs go to DIR/kernels)")
	repoDir := fs.String("repo", "", "the cifarlab checkout the kernels compile against (default: found from the working directory or the binary)")
	var opts kernel.BackendOptions
	var skipTools, asJSON bool
	if sub == "install" {
		fs.StringVar(&opts.CPU, "cpu-backend", "", "GOMLX_BACKEND of the CPU kernel (default: the XLA CPU plugin when found, else \"go\")")
		fs.StringVar(&opts.CUDA, "cuda-backend", "", "GOMLX_BACKEND of the CUDA kernel (default: detected plugin, else \"xla:cuda\")")
		fs.StringVar(&opts.CPUPlugin, "cpu-plugin", "", "XLA CPU PJRT plugin `FILE` for the CPU kernel (default $"+kernel.CPUPluginEnv+")")
		fs.StringVar(&opts.CUDAPlugin, "cuda-plugin", "", "CUDA PJRT plugin `FILE`, e.g. site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so (default $"+kernel.CUDAPluginEnv+", else searched)")
		fs.BoolVar(&skipTools, "no-build-tools", false, "do not build the pinned tools (they must exist in REPO/.bin)")
		fs.BoolVar(&asJSON, "json", false, "print the result as JSON")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *user && (*prefix != "" || *dataDir != "") {
		return &exitError{code: 2, err: fmt.Errorf("--user cannot be combined with --prefix or --jupyter-data-dir")}
	}
	dir, err := kernelDataDir(sub, *user, *prefix, *dataDir, *repoDir)
	if err != nil {
		return err
	}
	if sub == "uninstall" {
		return uninstallKernels(dir, stdout)
	}
	return installKernels(stdout, *repoDir, kernel.InstallOptions{DataDir: dir, Backends: opts, SkipTools: skipTools}, asJSON)
}

// installKernels installs the kernels of the checkout (repoDir, else found) as opts say, and
// prints where (or the result as JSON, the progress then going to stderr).
func installKernels(stdout io.Writer, repoDir string, opts kernel.InstallOptions, asJSON bool) error {
	repo, err := kernel.FindRepo(repoDir)
	if err != nil {
		return err
	}
	opts.Repo, opts.Log = repo, stdout
	if asJSON {
		opts.Log = os.Stderr
	}
	res, err := kernel.Install(context.Background(), opts)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(stdout, "installed %d kernelspecs in %s (manifest %s)\n", len(res.Kernels), opts.DataDir+"/kernels", res.Manifest)
	return nil
}

// kernelDataDir is the Jupyter data directory of `cifarlab kernel sub`: the user's with --user,
// --jupyter-data-dir's or --prefix's, else the checkout's default (kernel.DefaultDataDir), which
// it names on stderr with why.
func kernelDataDir(sub string, user bool, prefix, dataDir, repoDir string) (string, error) {
	var dir, why string
	var err error
	switch {
	case user:
		why = "--user"
		dir, err = kernel.UserDataDir()
	case dataDir != "" || prefix != "":
		dir, err = kernel.DataDirFor(dataDir, prefix)
	default:
		repo, rerr := kernel.FindRepo(repoDir)
		if rerr != nil {
			return "", fmt.Errorf("%w (or name the Jupyter folder with --user, --prefix DIR or --jupyter-data-dir DIR)", rerr)
		}
		dir, why, err = kernel.DefaultDataDir(repo)
	}
	if err != nil {
		return "", err
	}
	if why != "" {
		fmt.Fprintf(os.Stderr, "kernel %s: Jupyter data directory %s (%s)\n", sub, dir, why)
	}
	return dir, nil
}

// uninstallKernels removes what `cifarlab kernel install` wrote into dir, and says what it
// removed and kept.
func uninstallKernels(dir string, stdout io.Writer) error {
	res, err := kernel.Uninstall(dir)
	if err != nil {
		return err
	}
	for _, p := range res.Removed {
		fmt.Fprintln(stdout, "removed", p)
	}
	for _, p := range res.Kept {
		fmt.Fprintln(stdout, "kept", p, "(holds files cifarlab did not write)")
	}
	return nil
}
