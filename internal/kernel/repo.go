package kernel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/internal/repo"
)

// ModulePath is the module path of the cifarlab repository.
const ModulePath = repo.ModulePath

// RepoEnv names the environment variable that points at the repository when the
// cifarlab binary runs outside of it.
const RepoEnv = repo.Env

// Repo is a checkout of the cifarlab repository.
type Repo struct {
	// Dir is the absolute path of the repository root (the folder holding go.mod).
	Dir string
}

// BinDir is where kernel/setup.sh and "cifarlab kernel install" put the pinned gonb,
// goimports and gopls, and the cifarlab binary: Dir/.bin.
func (r Repo) BinDir() string { return filepath.Join(r.Dir, ".bin") }

// VenvDir is the Python virtual environment holding JupyterLab and nbclient: Dir/.venv.
func (r Repo) VenvDir() string { return filepath.Join(r.Dir, ".venv") }

// NotebooksDir is the folder JupyterLab opens: Dir/notebooks.
func (r Repo) NotebooksDir() string { return filepath.Join(r.Dir, "notebooks") }

// ToolsModDir is the separate module whose tool directives pin gonb, goimports and gopls.
func (r Repo) ToolsModDir() string { return filepath.Join(r.Dir, "tools") }

// Tool returns the path of a pinned tool binary ("gonb", "goimports", "gopls") in BinDir.
func (r Repo) Tool(name string) string { return filepath.Join(r.BinDir(), name) }

// ErrNoRepo is returned by FindRepo when no cifarlab checkout is found.
var ErrNoRepo = errors.New("cifarlab repository not found")

// IsRepo reports whether dir holds the go.mod of module ModulePath.
func IsRepo(dir string) bool { return repo.Is(dir) }

// FindRepo locates the repository: the first of explicit (a --repo flag), $CIFARLAB_REPO,
// the working directory and its parents, and the folder of the running executable and its
// parents (the binary normally lives in REPO/.bin) that holds the go.mod of ModulePath.
func FindRepo(explicit string) (Repo, error) {
	if explicit != "" {
		return repoAt(explicit, "--repo")
	}
	if env := os.Getenv(RepoEnv); env != "" {
		return repoAt(env, "$"+RepoEnv)
	}
	dir, starts := repo.Find()
	if dir != "" {
		return Repo{Dir: dir}, nil
	}
	return Repo{}, fmt.Errorf("%w: looked in %v and their parents for a go.mod of module %s: run inside the checkout, or set %s=/path/to/cifarlab",
		ErrNoRepo, starts, ModulePath, RepoEnv)
}

func repoAt(dir, source string) (Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Repo{}, fmt.Errorf("%s %q: %w", source, dir, err)
	}
	if !IsRepo(abs) {
		return Repo{}, fmt.Errorf("%w: %s=%q has no go.mod of module %s", ErrNoRepo, source, dir, ModulePath)
	}
	return Repo{Dir: abs}, nil
}
