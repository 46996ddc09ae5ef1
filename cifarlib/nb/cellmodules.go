package nb

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"golang.org/x/mod/modfile"
)

// A cell that imports cifarlib/nb says, once per kernel, which version it got of each module
// that the checkout's go.mod does not pin to the version linked in: a module the checkout does
// not require (the kernels resolve it to the newest version the module cache or the proxy has:
// internal/kernel/cellpins.go), or a module of go.mod at another version (a `go get MODULE@VERSION` in
// the notebook, or a new module that requires a newer one). Every other module is go.mod's,
// which the kernels pin.

// gonbTmpDirEnv names a GoNB kernel's folder (set by GoNB for the cells it runs); kernelRepoEnv
// is the checkout the kernel builds cells against (set by the cifarlab kernelspecs).
const (
	gonbTmpDirEnv = "GONB_TMP_DIR"
	kernelRepoEnv = "CIFARLAB_REPO"
)

// cellModulesReported is the file, in the kernel's folder, listing the module versions already
// reported ("PATH VERSION" lines).
const cellModulesReported = ".cifarlab-cell-modules"

func init() {
	if info, ok := debug.ReadBuildInfo(); ok && !inLabProcess {
		reportCellModules(os.Stderr, info.Deps, os.Getenv(kernelRepoEnv), os.Getenv(gonbTmpDirEnv))
	}
}

// reportCellModules writes to w one line for each module of deps (a cell binary's build
// information) whose version repo's go.mod does not require, unless kernelDir's
// cellModulesReported already lists it; it adds what it reports there. It does nothing outside a
// cifarlab kernel (repo or kernelDir empty) or when go.mod cannot be read.
func reportCellModules(w io.Writer, deps []*debug.Module, repo, kernelDir string) {
	if repo == "" || kernelDir == "" {
		return
	}
	path := filepath.Join(repo, "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	mf, err := modfile.ParseLax(path, data, nil)
	if err != nil {
		return
	}
	want := map[string]string{}
	for _, r := range mf.Require {
		want[r.Mod.Path] = r.Mod.Version
	}
	marker := filepath.Join(kernelDir, cellModulesReported)
	seen := map[string]bool{}
	if old, err := os.ReadFile(marker); err == nil {
		for _, line := range strings.Split(string(old), "\n") {
			seen[line] = true
		}
	}
	var lines []string
	for _, m := range deps {
		if m.Replace != nil || m.Version == "(devel)" || m.Path == mf.Module.Mod.Path {
			continue // the checkout itself, or a module the user replaced on purpose
		}
		key := m.Path + " " + m.Version
		v, required := want[m.Path]
		if seen[key] || v == m.Version {
			continue
		}
		if !required {
			fmt.Fprintf(w, "cifarlab: this kernel's cells also build with %s %s, which the checkout's go.mod does not require (the newest version the module cache or proxy had)\n", m.Path, m.Version)
		} else {
			fmt.Fprintf(w, "cifarlab: this kernel's cells build with %s %s, not go.mod's %s (a `go get` in the notebook, or a module that requires it): results may differ from the tests' and the CLI's; `cifarlab doctor` says which kernel\n", m.Path, m.Version, v)
		}
		lines = append(lines, key)
	}
	if len(lines) > 0 {
		f, err := os.OpenFile(marker, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			_, _ = f.WriteString(strings.Join(lines, "\n") + "\n")
			_ = f.Close()
		}
	}
}
