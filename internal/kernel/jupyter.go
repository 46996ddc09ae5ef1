package kernel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// installHint says how to get JupyterLab when it is missing.
const installHint = "install it with `bash kernel/setup.sh` (creates .venv with the pinned JupyterLab and nbclient, builds the tools and installs the kernels), " +
	"or by hand: /usr/bin/python3 -m venv .venv && .venv/bin/pip install -r kernel/requirements.txt -c kernel/constraints.txt"

// ErrNoJupyter is returned by findJupyter when no jupyter command is found.
var ErrNoJupyter = errors.New("jupyter not found")

// jupyter is a jupyter installation, found through its jupyter command.
type jupyter struct {
	// Bin is the absolute path of the jupyter command.
	Bin string
}

// findJupyter returns the jupyter of the repository's venv (REPO/.venv/bin/jupyter) when
// it exists, else the first jupyter on PATH.
func findJupyter(repo Repo) (jupyter, error) {
	if repo.Dir != "" {
		if p := filepath.Join(repo.VenvDir(), "bin", "jupyter"); fileExists(p) {
			return jupyter{Bin: p}, nil
		}
	}
	if p, err := exec.LookPath("jupyter"); err == nil {
		abs, _ := filepath.Abs(p)
		return jupyter{Bin: abs}, nil
	}
	venv := "REPO/.venv"
	if repo.Dir != "" {
		venv = repo.VenvDir()
	}
	return jupyter{}, fmt.Errorf("%w (not in %s, not on PATH): %s", ErrNoJupyter, venv, installHint)
}

// Command returns an exec.Cmd running `jupyter args...` with the jupyter's folder first
// on PATH (so its python and jupyter-lab are the ones used) and extra environment added.
func (j jupyter) Command(ctx context.Context, extraEnv []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, j.Bin, args...)
	env := os.Environ()
	env = setEnv(env, "PATH", filepath.Dir(j.Bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, kv := range extraEnv {
		k, v, _ := strings.Cut(kv, "=")
		env = setEnv(env, k, v)
	}
	cmd.Env = env
	return cmd
}

// setEnv returns env with key set to value (replacing any previous value).
func setEnv(env []string, key, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// Versions returns the versions `jupyter --version` reports, by package name (e.g.
// "jupyterlab": "4.6.6"); packages reported as "not installed" are left out.
func (j jupyter) Versions(ctx context.Context) (map[string]string, error) {
	out, err := j.Command(ctx, nil, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", j.Bin, err)
	}
	vs := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, ver, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		name, ver = strings.TrimSpace(name), strings.TrimSpace(ver)
		if name != "" && ver != "" && ver != "not installed" {
			vs[name] = ver
		}
	}
	return vs, nil
}

// listedSpec is one entry of `jupyter kernelspec list --json`.
type listedSpec struct {
	ResourceDir string     `json:"resource_dir"`
	Spec        KernelSpec `json:"spec"`
}

// KernelSpecs runs `jupyter kernelspec list --json` with extra environment (e.g.
// JUPYTER_DATA_DIR=...) and returns the kernelspecs Jupyter sees, by name.
func (j jupyter) KernelSpecs(ctx context.Context, extraEnv ...string) (map[string]listedSpec, error) {
	cmd := j.Command(ctx, extraEnv, "kernelspec", "list", "--json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("jupyter kernelspec list: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var list struct {
		Kernelspecs map[string]listedSpec `json:"kernelspecs"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("jupyter kernelspec list --json printed something that is not JSON: %w", err)
	}
	return list.Kernelspecs, nil
}

// DataPath runs `jupyter --paths --json` with extra environment and returns Jupyter's data
// path: the folders it searches for kernels/NAME, first match winning.
func (j jupyter) DataPath(ctx context.Context, extraEnv ...string) ([]string, error) {
	cmd := j.Command(ctx, extraEnv, "--paths", "--json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("jupyter --paths: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var paths struct {
		Data []string `json:"data"`
	}
	if err := json.Unmarshal(out, &paths); err != nil {
		return nil, fmt.Errorf("jupyter --paths --json printed something that is not JSON: %w", err)
	}
	return paths.Data, nil
}
