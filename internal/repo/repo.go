// Package repo finds the cifarlab checkout: the folder whose go.mod declares ModulePath. It is
// the lab's plumbing, shared by cifarlib (to find the XLA CPU plugin in the checkout's .venv),
// kernel and the cifarlab command.
package repo

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// ModulePath is the Go module path of this repository; its go.mod marks the repository root.
const ModulePath = "github.com/cifarlab/cifarlab"

// Env names the environment variable that points at the checkout when a program runs outside
// of it (the kernels set it); by default the checkout is found from the working directory (or
// the executable) upwards.
const Env = "CIFARLAB_REPO"

// Find returns the cifarlab checkout: $CIFARLAB_REPO when it holds this module's go.mod, else
// the first such folder at or above the working directory, else at or above the running
// executable's folder (the cifarlab binary lives in REPO/.bin). It returns "" when there is
// none, with the folders it searched (for error messages).
func Find() (dir string, searched []string) {
	if env := os.Getenv(Env); env != "" {
		if abs, err := filepath.Abs(env); err == nil && Is(abs) {
			return abs, []string{env}
		}
		return "", []string{env}
	}
	if wd, err := os.Getwd(); err == nil {
		searched = append(searched, wd)
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		searched = append(searched, filepath.Dir(exe))
	}
	for _, start := range searched {
		for dir := start; ; dir = filepath.Dir(dir) {
			if Is(dir) {
				return dir, searched
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return "", searched
}

// Dir is Find without the searched folders: the checkout, or "".
func Dir() string {
	dir, _ := Find()
	return dir
}

// Is reports whether dir holds a go.mod declaring ModulePath.
func Is(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == ModulePath
		}
	}
	return false
}
