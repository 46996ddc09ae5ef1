package kernel

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// jupyterDataDirEnv is Jupyter's environment variable for its data directory, the folder
// whose kernels/ subfolder holds the user's kernelspecs.
const jupyterDataDirEnv = "JUPYTER_DATA_DIR"

// DataDirFor resolves the Jupyter data directory to install kernelspecs into:
// explicit (a --jupyter-data-dir flag) if set, else PREFIX/share/jupyter for a prefix
// install (what `jupyter kernelspec install --prefix` uses; a venv's sys.prefix or
// /usr/local for a system-wide install), else $JUPYTER_DATA_DIR, else the user's data
// directory (~/.local/share/jupyter on Linux, ~/Library/Jupyter on macOS).
func DataDirFor(explicit, prefix string) (string, error) {
	switch {
	case explicit != "" && prefix != "":
		return "", fmt.Errorf("give either --jupyter-data-dir or --prefix, not both")
	case explicit != "":
		return filepath.Abs(explicit)
	case prefix != "":
		abs, err := filepath.Abs(prefix)
		if err != nil {
			return "", err
		}
		return filepath.Join(abs, "share", "jupyter"), nil
	}
	return UserDataDir()
}

// preferEnvPathEnv is jupyter_core's switch between searching the environment's (venv's)
// share/jupyter before the user's data directory ("1", the default in a venv the user owns) or
// after it ("0").
const preferEnvPathEnv = "JUPYTER_PREFER_ENV_PATH"

// dataDirEnv is the environment that makes a Jupyter use the kernelspecs of the data directory
// dir: JUPYTER_DATA_DIR=dir, and JUPYTER_PREFER_ENV_PATH=0 so that dir is searched before the
// venv's share/jupyter, where setup installs the checkout's kernels (otherwise those would hide
// the ones in dir).
func dataDirEnv(dir string) []string {
	return []string{jupyterDataDirEnv + "=" + dir, preferEnvPathEnv + "=0"}
}

// DefaultDataDir is where `cifarlab kernel install` puts the kernelspecs when no flag says:
// $JUPYTER_DATA_DIR when it is set (the user chose that folder), else the share/jupyter folder
// of the virtual environment whose jupyter `cifarlab lab` runs (findJupyter: REPO/.venv), which
// only that environment's Jupyter searches, so that each checkout's lab starts that checkout's
// kernels; else, without a venv, the user's data directory, which every checkout shares. why
// says which, in words.
func DefaultDataDir(repo Repo) (dir, why string, err error) {
	if d := os.Getenv(jupyterDataDirEnv); d != "" {
		dir, err = filepath.Abs(d)
		return dir, "$" + jupyterDataDirEnv, err
	}
	if prefix := venvPrefix(repo); prefix != "" {
		return filepath.Join(prefix, "share", "jupyter"), "the venv " + prefix + ", seen only by its own Jupyter", nil
	}
	dir, err = UserDataDir()
	return dir, "the user's Jupyter folder (no venv found; every checkout of this user shares it)", err
}

// venvPrefix is the folder of the virtual environment (its sys.prefix, the folder holding
// pyvenv.cfg) of the jupyter findJupyter picks for repo, or "" when that jupyter is not in a
// venv or there is none.
func venvPrefix(repo Repo) string {
	jup, err := findJupyter(repo)
	if err != nil {
		return ""
	}
	prefix := filepath.Dir(filepath.Dir(jup.Bin))
	if !fileExists(filepath.Join(prefix, "pyvenv.cfg")) {
		return ""
	}
	return prefix
}

// UserDataDir is Jupyter's per-user data directory: $JUPYTER_DATA_DIR when set, else the
// platform default.
func UserDataDir() (string, error) {
	if d := os.Getenv(jupyterDataDirEnv); d != "" {
		return filepath.Abs(d)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory to put kernelspecs in (set %s): %w", jupyterDataDirEnv, err)
	}
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, "Library", "Jupyter"), nil
	}
	if xdg := os.Getenv("XDG_DATA_HOME"); xdg != "" {
		return filepath.Join(xdg, "jupyter"), nil
	}
	return filepath.Join(home, ".local", "share", "jupyter"), nil
}

// kernelDir is the folder of a kernelspec in a data directory.
func kernelDir(dataDir, name string) string { return filepath.Join(dataDir, "kernels", name) }
