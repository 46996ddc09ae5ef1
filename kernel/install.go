package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// ManifestName is the file, under DATA_DIR/cifarlab/, that records what Install wrote so
// that Uninstall removes exactly that.
const ManifestName = "kernels-manifest.json"

// InstallOptions configure Install.
type InstallOptions struct {
	// Repo is the repository the kernels compile against.
	Repo Repo
	// DataDir is the Jupyter data directory; kernelspecs go to DataDir/kernels/NAME.
	// See DataDirFor.
	DataDir string
	// Backends steers the backend of each kernel (zero value: detect).
	Backends BackendOptions
	// SkipTools skips building the pinned tools and the kernel supervisor when they exist.
	SkipTools bool
	// Log receives progress lines (nil: discard).
	Log io.Writer
}

// InstalledKernel describes one kernelspec written by Install.
type InstalledKernel struct {
	Name    string     `json:"name"`
	Dir     string     `json:"dir"`
	Spec    KernelSpec `json:"spec"`
	Changed bool       `json:"changed"`
}

// InstallResult is what Install did.
type InstallResult struct {
	DataDir    string            `json:"data_dir"`
	Kernels    []InstalledKernel `json:"kernels"`
	ToolsBuilt bool              `json:"tools_built"`
	Manifest   string            `json:"manifest"`
}

// Manifest lists the files and folders Install created, for Uninstall.
type Manifest struct {
	Repo  string   `json:"repo"`
	Files []string `json:"files"`
	// Dirs are the folders Install created (not those that already existed).
	Dirs []string `json:"dirs"`
	// Trees are the folders Install wrote whole (the cells' pinned proxy), removed whole.
	Trees []string `json:"trees,omitempty"`
}

// ManifestPath is where Install keeps its manifest for a data directory.
func ManifestPath(dataDir string) string { return filepath.Join(dataDir, "cifarlab", ManifestName) }

// KernelDir is the folder of a kernelspec in a data directory.
func KernelDir(dataDir, name string) string { return filepath.Join(dataDir, "kernels", name) }

// Install builds the pinned tools when needed and writes the CPU and CUDA kernelspecs into
// opts.DataDir. Running it again rewrites only what changed and keeps one manifest.
func Install(ctx context.Context, opts InstallOptions) (*InstallResult, error) {
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	if opts.DataDir == "" {
		return nil, errors.New("kernel install: no Jupyter data directory given")
	}
	res := &InstallResult{DataDir: opts.DataDir, Manifest: ManifestPath(opts.DataDir)}
	if !opts.SkipTools {
		built, err := EnsureTools(ctx, opts.Repo, log)
		if err != nil {
			return nil, err
		}
		res.ToolsBuilt = built
	}
	if !opts.SkipTools || !fileExists(opts.Repo.Tool(SupervisorName)) {
		if err := BuildSupervisor(ctx, opts.Repo, log); err != nil {
			return nil, err
		}
	}
	for _, t := range PinnedTools {
		if !fileExists(opts.Repo.Tool(t.Name)) {
			return nil, fmt.Errorf("%s is missing: build the pinned tools with `cd %s && GOBIN=%s go install tool` (or run kernel/setup.sh)",
				opts.Repo.Tool(t.Name), opts.Repo.ToolsModDir(), opts.Repo.BinDir())
		}
	}
	goTools, err := FindGoTools(ctx, opts.Repo)
	if err != nil {
		return nil, err
	}
	man, err := ReadManifest(opts.DataDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if man == nil {
		man = &Manifest{}
	}
	man.Repo = opts.Repo.Dir
	tr := &tracker{man: man}
	if goTools.CellPins, err = installCellPins(ctx, opts.Repo, opts.DataDir, goTools, tr, log); err != nil {
		return nil, err
	}
	cpu, err := ChooseCPUBackend(opts.Repo, opts.Backends)
	if err != nil {
		return nil, fmt.Errorf("CPU kernel: %w", err)
	}
	cuda, err := ChooseCUDABackend(ctx, opts.Repo, filepath.Join(opts.DataDir, "cifarlab", "pjrt-cuda"), opts.Backends)
	if err != nil {
		return nil, fmt.Errorf("CUDA kernel: %w", err)
	}

	for _, k := range []struct {
		name, kind string
		b          Backend
	}{{CPUKernel, "cpu", cpu}, {CUDAKernel, "cuda", cuda}} {
		dir := KernelDir(opts.DataDir, k.name)
		if err := tr.mkdirAll(dir); err != nil {
			return nil, err
		}
		for _, l := range k.b.Links {
			if err := tr.symlink(l); err != nil {
				return nil, err
			}
		}
		spec := NewKernelSpec(opts.Repo, k.kind, goTools, k.b)
		data, err := json.MarshalIndent(spec, "", "  ")
		if err != nil {
			return nil, err
		}
		changed, err := tr.writeFile(filepath.Join(dir, "kernel.json"), append(data, '\n'))
		if err != nil {
			return nil, err
		}
		logoChanged, err := tr.writeFile(filepath.Join(dir, "logo-svg.svg"), []byte(logoSVG))
		if err != nil {
			return nil, err
		}
		res.Kernels = append(res.Kernels, InstalledKernel{Name: k.name, Dir: dir, Spec: spec, Changed: changed || logoChanged})
		state := "unchanged"
		if changed || logoChanged {
			state = "written"
		}
		fmt.Fprintf(log, "%s %q -> %s (%s; GOMLX_BACKEND=%s: %s)\n", k.name, spec.DisplayName, dir, state, k.b.GoMLX, k.b.Reason)
	}
	// The cells' first `go get`, run now: what it asks of the network (checksums of newer
	// go.mod files that other projects left in the module cache) is fetched at install, not by
	// the user's first cell. Offline, the first cell asks instead.
	if n, err := WarmCellGet(ctx, opts.Repo, goTools); err != nil {
		fmt.Fprintf(log, "warning: could not run the cells' go get ahead (the first cell will): %v\n", err)
	} else {
		fmt.Fprintf(log, "cells' go get warmed: %d network requests now, none left for the first cell\n", n)
	}
	if err := tr.mkdirAll(filepath.Dir(res.Manifest)); err != nil {
		return nil, err
	}
	sort.Strings(man.Files)
	data, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(res.Manifest, append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	return res, nil
}

// installCellPins makes the cells' pinned module proxy (cellpins.go) of the checkout's go.mod and
// go.sum beside the kernelspecs of dataDir (EnsureCellProxy), so that every cell builds with
// go.mod's versions of the modules the checkout requires, and records it in the manifest. It
// writes nothing when that build list's folder is there (a user-level install over an image's
// checkout writes only into the user's data directory). It returns the folder.
func installCellPins(ctx context.Context, repo Repo, dataDir string, gt GoTools, tr *tracker, log io.Writer) (string, error) {
	mods, err := BuildList(ctx, repo, gt)
	if err != nil {
		return "", err
	}
	if err := tr.mkdirAll(filepath.Join(dataDir, "cifarlab", cellPinsFolder)); err != nil {
		return "", err
	}
	pins, written, err := EnsureCellProxy(dataDir, gt.ModCache, mods)
	if err != nil {
		return "", err
	}
	tr.man.Trees = []string{pins}
	state := "there already"
	if written {
		state = "written"
	}
	fmt.Fprintf(log, "cells build with %s and go.mod's versions of %d modules (pinned in %s: %s)\n", or(gt.Version, "the go command on PATH"), len(mods), pins, state)
	// Where installs before this one wrote the pins: inside the checkout.
	if legacy := filepath.Join(repo.BinDir(), cellPinsFolder); dirExists(legacy) {
		if err := os.RemoveAll(legacy); err == nil {
			fmt.Fprintf(log, "removed %s (the cells' pins now live with the kernelspecs)\n", legacy)
		}
	}
	return pins, nil
}

// ReadManifest reads the manifest of a data directory; the error wraps os.ErrNotExist when
// there is none.
func ReadManifest(dataDir string) (*Manifest, error) {
	p := ManifestPath(dataDir)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s is not a cifarlab kernel manifest (%v): remove the kernels with `jupyter kernelspec remove %s %s` and delete it", p, err, CPUKernel, CUDAKernel)
	}
	return &m, nil
}

// UninstallResult lists what Uninstall removed and the folders it kept because they hold
// files install did not write (e.g. Jupyter's runtime/ in the data directory).
type UninstallResult struct {
	Removed []string `json:"removed"`
	Kept    []string `json:"kept"`
}

// Uninstall removes exactly what Install recorded in dataDir's manifest: its files, then
// the folders it created when they are empty, then the manifest.
func Uninstall(dataDir string) (*UninstallResult, error) {
	man, err := ReadManifest(dataDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no cifarlab kernel manifest at %s: nothing was installed there by `cifarlab kernel install` (check --jupyter-data-dir/--prefix/$%s)", ManifestPath(dataDir), JupyterDataDirEnv)
	}
	if err != nil {
		return nil, err
	}
	res := &UninstallResult{}
	for _, f := range man.Files {
		if err := os.Remove(f); err == nil {
			res.Removed = append(res.Removed, f)
		} else if !errors.Is(err, os.ErrNotExist) {
			return res, fmt.Errorf("removing %s: %w", f, err)
		}
	}
	mp := ManifestPath(dataDir)
	if err := os.Remove(mp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, err
	}
	res.Removed = append(res.Removed, mp)
	for _, d := range man.Trees {
		if err := os.RemoveAll(d); err != nil {
			return res, fmt.Errorf("removing %s: %w", d, err)
		}
		res.Removed = append(res.Removed, d)
	}
	dirs := append([]string(nil), man.Dirs...)
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) }) // deepest first
	for _, d := range dirs {
		if err := os.Remove(d); err == nil {
			res.Removed = append(res.Removed, d)
		} else if !errors.Is(err, os.ErrNotExist) {
			res.Kept = append(res.Kept, d)
		}
	}
	return res, nil
}

// tracker writes files and folders and records them in the manifest.
type tracker struct{ man *Manifest }

func (t *tracker) mkdirAll(dir string) error {
	var created []string
	for d := dir; !dirExists(d); d = filepath.Dir(d) {
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for _, d := range created {
		if !contains(t.man.Dirs, d) {
			t.man.Dirs = append(t.man.Dirs, d)
		}
	}
	return nil
}

// writeFile writes data atomically unless the file already holds it; it reports whether
// it wrote.
func (t *tracker) writeFile(path string, data []byte) (bool, error) {
	if !contains(t.man.Files, path) {
		t.man.Files = append(t.man.Files, path)
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	return true, writeFileAtomic(path, data, 0o644)
}

// symlink makes l.Path point to l.Target, replacing a link that points elsewhere.
func (t *tracker) symlink(l Link) error {
	if err := t.mkdirAll(filepath.Dir(l.Path)); err != nil {
		return err
	}
	if !contains(t.man.Files, l.Path) {
		t.man.Files = append(t.man.Files, l.Path)
	}
	if cur, err := os.Readlink(l.Path); err == nil {
		if cur == l.Target {
			return nil
		}
		if err := os.Remove(l.Path); err != nil {
			return err
		}
	}
	if err := os.Symlink(l.Target, l.Path); err != nil {
		return fmt.Errorf("linking %s -> %s: %w", l.Path, l.Target, err)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeFileAtomic writes to a temporary file in the same folder and renames it over path.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, perm)
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	return nil
}

// logoSVG is the kernels' launcher icon: a CIFAR-like 3x3 tile grid with "Go".
const logoSVG = `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">
<rect width="64" height="64" rx="8" fill="#00ADD8"/>
<g fill="#ffffff" opacity="0.35"><rect x="6" y="6" width="16" height="16"/><rect x="42" y="6" width="16" height="16"/><rect x="24" y="42" width="16" height="16"/></g>
<text x="32" y="41" font-family="sans-serif" font-size="26" font-weight="bold" text-anchor="middle" fill="#ffffff">Go</text>
</svg>
`
