package kernel

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// JupyterDataDirEnv is Jupyter's environment variable for its data directory, the folder
// whose kernels/ subfolder holds the user's kernelspecs.
const JupyterDataDirEnv = "JUPYTER_DATA_DIR"

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

// UserDataDir is Jupyter's per-user data directory: $JUPYTER_DATA_DIR when set, else the
// platform default.
func UserDataDir() (string, error) {
	if d := os.Getenv(JupyterDataDirEnv); d != "" {
		return filepath.Abs(d)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory to put kernelspecs in (set %s): %w", JupyterDataDirEnv, err)
	}
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, "Library", "Jupyter"), nil
	}
	if xdg := os.Getenv("XDG_DATA_HOME"); xdg != "" {
		return filepath.Join(xdg, "jupyter"), nil
	}
	return filepath.Join(home, ".local", "share", "jupyter"), nil
}

func evalSymlinksAbs(p string) (string, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(p)
}

func dirOf(p string) string { return filepath.Dir(p) }

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
