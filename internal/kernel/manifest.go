package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// manifestName is the file, under DATA_DIR/cifarlab/, that records what Install wrote so
// that Uninstall removes exactly that.
const manifestName = "kernels-manifest.json"

// manifest lists the files and folders Install created, for Uninstall.
type manifest struct {
	Repo  string   `json:"repo"`
	Files []string `json:"files"`
	// Dirs are the folders Install created (not those that already existed).
	Dirs []string `json:"dirs"`
	// Trees are the folders Install wrote whole (the cells' pinned proxy), removed whole.
	Trees []string `json:"trees,omitempty"`
}

// manifestPath is where Install keeps its manifest for a data directory.
func manifestPath(dataDir string) string { return filepath.Join(dataDir, "cifarlab", manifestName) }

// readManifest reads the manifest of a data directory; the error wraps os.ErrNotExist when
// there is none.
func readManifest(dataDir string) (*manifest, error) {
	p := manifestPath(dataDir)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var m manifest
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
	man, err := readManifest(dataDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no cifarlab kernel manifest at %s: nothing was installed there by `cifarlab kernel install` (check --jupyter-data-dir/--prefix/$%s)", manifestPath(dataDir), jupyterDataDirEnv)
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
	mp := manifestPath(dataDir)
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
type tracker struct{ man *manifest }

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
		if !slices.Contains(t.man.Dirs, d) {
			t.man.Dirs = append(t.man.Dirs, d)
		}
	}
	return nil
}

// writeFile writes data atomically unless the file already holds it; it reports whether
// it wrote.
func (t *tracker) writeFile(path string, data []byte) (bool, error) {
	if !slices.Contains(t.man.Files, path) {
		t.man.Files = append(t.man.Files, path)
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	return true, writeFileAtomic(path, data, 0o644)
}

// symlink makes l.Path point to l.Target, replacing a link that points elsewhere.
func (t *tracker) symlink(l link) error {
	if err := t.mkdirAll(filepath.Dir(l.Path)); err != nil {
		return err
	}
	if !slices.Contains(t.man.Files, l.Path) {
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

// openManifest is a tracker of dataDir's manifest, or of a new one when there is none, made
// for repo.
func openManifest(dataDir string, repo Repo) (*tracker, error) {
	man, err := readManifest(dataDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if man == nil {
		man = &manifest{}
	}
	man.Repo = repo.Dir
	return &tracker{man: man}, nil
}

// save writes the manifest to path (atomically; its folder recorded when created), its files
// sorted.
func (t *tracker) save(path string) error {
	if err := t.mkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	sort.Strings(t.man.Files)
	data, err := json.MarshalIndent(t.man, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(data, '\n'), 0o644)
}
