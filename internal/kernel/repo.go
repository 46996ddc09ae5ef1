package kernel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/internal/repo"
)

// modulePath is the module path of the cifarlab repository.
const modulePath = repo.ModulePath

// repoEnv names the environment variable that points at the repository when the
// cifarlab binary runs outside of it.
const repoEnv = repo.Env

// Repo is a checkout of the cifarlab repository.
type Repo struct {
	// Dir is the absolute path of the repository root (the folder holding go.mod).
	Dir string
}

// binDir is where kernel/setup.sh and "cifarlab kernel install" put the pinned gonb,
// goimports and gopls, and the cifarlab binary: Dir/.bin.
func (r Repo) binDir() string { return filepath.Join(r.Dir, ".bin") }

// VenvDir is the Python virtual environment holding JupyterLab and nbclient: Dir/.venv.
func (r Repo) VenvDir() string { return filepath.Join(r.Dir, ".venv") }

// notebooksDir is the folder JupyterLab opens: Dir/notebooks.
func (r Repo) notebooksDir() string { return filepath.Join(r.Dir, "notebooks") }

// toolsModDir is the separate module whose tool directives pin gonb, goimports and gopls.
func (r Repo) toolsModDir() string { return filepath.Join(r.Dir, "tools") }

// Tool returns the path of a pinned tool binary ("gonb", "goimports", "gopls") in binDir.
func (r Repo) Tool(name string) string { return filepath.Join(r.binDir(), name) }

// errNoRepo is returned by FindRepo when no cifarlab checkout is found.
var errNoRepo = errors.New("cifarlab repository not found")

// isRepo reports whether dir holds the go.mod of module modulePath.
func isRepo(dir string) bool { return repo.Is(dir) }

// FindRepo locates the repository: the first of explicit (a --repo flag), $CIFARLAB_REPO,
// the working directory and its parents, and the folder of the running executable and its
// parents (the binary normally lives in REPO/.bin) that holds the go.mod of modulePath.
func FindRepo(explicit string) (Repo, error) {
	if explicit != "" {
		return repoAt(explicit, "--repo")
	}
	if env := os.Getenv(repoEnv); env != "" {
		return repoAt(env, "$"+repoEnv)
	}
	dir, starts := repo.Find()
	if dir != "" {
		return Repo{Dir: dir}, nil
	}
	return Repo{}, fmt.Errorf("%w: looked in %v and their parents for a go.mod of module %s: run inside the checkout, or set %s=/path/to/cifarlab",
		errNoRepo, starts, modulePath, repoEnv)
}

func repoAt(dir, source string) (Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Repo{}, fmt.Errorf("%s %q: %w", source, dir, err)
	}
	if !isRepo(abs) {
		return Repo{}, fmt.Errorf("%w: %s=%q has no go.mod of module %s", errNoRepo, source, dir, modulePath)
	}
	return Repo{Dir: abs}, nil
}
