package labproc

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

const (
	// Env turns the lab process off when it is "0" (or "off", "false"): every cell then
	// trains and evaluates in its own program, as before the lab process existed.
	Env = "CIFARLAB_LAB_PROCESS"
	// IdleEnv is how long the lab process waits for a cell before it ends and frees the device
	// (a Go duration such as "30m" or "90s"); default DefaultIdle.
	IdleEnv = "CIFARLAB_LAB_IDLE"
	// TrimEnv is how long the lab process waits without a cell before it lets go of what a
	// later cell can make again (loaded runs, data; a Go duration); default DefaultTrimAfter.
	TrimEnv = "CIFARLAB_LAB_TRIM"
	// ServeEnv is set in the lab process's environment to its socket: the cell's binary,
	// started with it, serves instead of running the cell.
	ServeEnv = "CIFARLAB_LAB_SERVE"
	// GoNBTmpEnv is GoNB's folder of one kernel's cells (GONB_TMP_DIR): it names the kernel, so
	// the lab process's socket lives there, one per kernel.
	GoNBTmpEnv = "GONB_TMP_DIR"

	fingerprintEnv = "CIFARLAB_LAB_FINGERPRINT"
	kernelPIDEnv   = "CIFARLAB_LAB_KERNEL_PID"
	kernelStartEnv = "CIFARLAB_LAB_KERNEL_START"
)

// Off reports whether the environment turns the lab process off (Env).
func Off() bool {
	switch os.Getenv(Env) {
	case "0", "off", "false", "no":
		return true
	}
	return false
}

// Folder returns the lab process's folder for the kernel whose cells live in gonbTmp (GoNB's
// GONB_TMP_DIR), creating it: gonbTmp/cifarlab-lab, mode 0700, owned by this user, not a
// symbolic link. It holds the socket, the server's binary and its log.
func Folder(gonbTmp string) (string, error) {
	if gonbTmp == "" {
		return "", fmt.Errorf("labproc: no kernel folder: $%s is not set (not a GoNB cell)", GoNBTmpEnv)
	}
	dir := filepath.Join(gonbTmp, "cifarlab-lab")
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("labproc: creating the lab process's folder: %w", err)
	}
	return dir, checkPrivate(dir)
}

// checkPrivate requires dir to be a real folder of this user that no one else can enter.
func checkPrivate(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("labproc: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("labproc: %s is not a folder (a symbolic link or a file): remove it", dir)
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("labproc: %s belongs to another user: remove it", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("labproc: %s is open to other users (mode %v): remove it, or chmod 700 it", dir, fi.Mode().Perm())
	}
	return nil
}

// SocketPath is the socket of the lab process in folder.
func SocketPath(folder string) string { return filepath.Join(folder, "lab.sock") }

// LogPath is where the lab process writes what it prints itself (its own errors, a backend's
// C++ log): the cell's output gets the messages of its requests only.
func LogPath(folder string) string { return filepath.Join(folder, "lab.log") }

func pidPath(folder string) string { return filepath.Join(folder, "lab.pid") }
