package kernel

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/module"
)

// Cells are pinned to the checkout's module versions by a module proxy of their own, first in the
// kernels' GOPROXY (cellGoProxy): a folder, REPO/.bin/cell-proxy, that lists for every module of
// the checkout's build list (`go list -m all`) exactly one version, go.mod's.
//
// Why a proxy, and not the cell's go.mod or its go.work: GoNB writes the cell module's go.mod
// itself (`go mod init` at every kernel start and at %reset, then a replace for each go.work
// entry) and runs `go get` before every cell. `go get` resolves an import that the cell module
// does not require by asking the proxy for the module's latest version; it skips only packages
// inside the workspace's modules (cmd/go, golang/go#73654), not the modules they require, so
// go.work's view of the checkout (gomlx v0.28.16) does not stop it from taking the newest
// version the module cache lists (the cells' GOPROXY reads the cache first), and -mod=mod with
// the checkout's go.sum is refused in workspace mode. The proxy is consulted by every go command
// a cell runs, whatever GoNB does to its go.mod: `go get`, `go get -u` and @latest see go.mod's
// version as the only one, and MVS over the workspace (the checkout's requirements and the
// cell's) then selects exactly go.mod's versions. Everything else falls through, because a
// file:// proxy answers "not found" for what it does not hold and the go command then asks the
// next one (the ',' separator): the .info, .mod and .zip files (from the module cache), a module
// the checkout does not require (its newest version, from the cache or the network), and an
// explicit `go get MODULE@VERSION`. A pinned module keeps no other versions from the user, only
// from "latest".

// cellProxyDir is the folder of the cells' pinned module proxy: REPO/.bin/cell-proxy.
func cellProxyDir(repo Repo) string { return filepath.Join(repo.binDir(), "cell-proxy") }

// cellProxyURL is the file:// URL of a folder, as GOPROXY takes it.
func cellProxyURL(dir string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
}

// buildList returns the checkout's build list as go.mod and go.sum fix it: every module of
// `go list -m all` (with GOFLAGS=-mod=readonly, GOWORK=off) but the checkout itself, by path.
func buildList(ctx context.Context, repo Repo, gt goTools) (map[string]string, error) {
	cmd := exec.CommandContext(ctx, gt.Go(), "list", "-m", "-f", "{{if not .Main}}{{.Path}} {{.Version}}{{end}}", "all")
	cmd.Dir = repo.Dir
	cmd.Env = append(gt.Env(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("the checkout's build list (cd %s && go list -m all): %w: %s", repo.Dir, err, strings.TrimSpace(stderr.String()))
	}
	mods := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 {
			mods[f[0]] = f[1]
		}
	}
	return mods, nil
}

// writeCellProxy writes the cells' pinned proxy for the build list mods into dir (see
// cellProxyDir): for each module, ESCAPED_PATH/@v/list with its one version and
// ESCAPED_PATH/@latest with its version's .info (the module cache's, when modCache holds it; the
// go command asks @latest for a module whose list holds only a pseudo-version). The folder is
// replaced whole (written beside it and renamed), so a cell never reads half of it.
func writeCellProxy(dir, modCache string, mods map[string]string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for path, version := range mods {
		esc, err := module.EscapePath(path)
		if err != nil {
			return fmt.Errorf("cell proxy: module %q: %w", path, err)
		}
		escVersion, err := module.EscapeVersion(version)
		if err != nil {
			return fmt.Errorf("cell proxy: module %s version %q: %w", path, version, err)
		}
		mdir := filepath.Join(tmp, filepath.FromSlash(esc))
		if err := os.MkdirAll(filepath.Join(mdir, "@v"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(mdir, "@v", "list"), []byte(version+"\n"), 0o644); err != nil {
			return err
		}
		info := []byte(fmt.Sprintf("{\"Version\":%q}\n", version))
		if modCache != "" {
			if data, err := os.ReadFile(filepath.Join(modCache, "cache", "download", filepath.FromSlash(esc), "@v", escVersion+".info")); err == nil {
				var rev struct{ Version string }
				if json.Unmarshal(data, &rev) == nil && rev.Version == version {
					info = data
				}
			}
		}
		if err := os.WriteFile(filepath.Join(mdir, "@latest"), info, 0o644); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	old := dir + ".old"
	_ = os.RemoveAll(old)
	if err := os.Rename(dir, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// readCellProxy reads back the versions a cell proxy folder pins, by module path.
func readCellProxy(dir string) (map[string]string, error) {
	mods := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != "list" || filepath.Base(filepath.Dir(p)) != "@v" {
			return nil
		}
		rel, err := filepath.Rel(dir, filepath.Dir(filepath.Dir(p)))
		if err != nil {
			return err
		}
		path, err := module.UnescapePath(filepath.ToSlash(rel))
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		mods[path] = strings.TrimSpace(string(data))
		return nil
	})
	return mods, err
}

// updateCellProxy writes repo's cell proxy (cellProxyDir) from the checkout's build list;
// Install runs it. It returns the number of modules pinned.
func updateCellProxy(ctx context.Context, repo Repo, gt goTools) (int, error) {
	mods, err := buildList(ctx, repo, gt)
	if err != nil {
		return 0, err
	}
	if err := writeCellProxy(cellProxyDir(repo), gt.ModCache, mods); err != nil {
		return 0, fmt.Errorf("writing the cells' pinned module proxy %s: %w", cellProxyDir(repo), err)
	}
	return len(mods), nil
}

// drift is a module whose version differs between two module lists.
type drift struct {
	// Path is the module, Want go.mod's version ("" when go.mod does not have it), Have the other.
	Path, Want, Have string
}

func (d drift) String() string {
	if d.Want == "" {
		return fmt.Sprintf("%s %s (not in go.mod's build list)", d.Path, d.Have)
	}
	if d.Have == "" {
		return fmt.Sprintf("%s (go.mod: %s) not pinned", d.Path, d.Want)
	}
	return fmt.Sprintf("%s %s (go.mod: %s)", d.Path, d.Have, d.Want)
}

// drifts lists, sorted by path, the modules of have whose version differs from want's, and with
// missing the modules of want that have lacks.
func drifts(want, have map[string]string, missing bool) []drift {
	var ds []drift
	for p, v := range have {
		if want[p] != v {
			ds = append(ds, drift{Path: p, Want: want[p], Have: v})
		}
	}
	if missing {
		for p, v := range want {
			if _, ok := have[p]; !ok {
				ds = append(ds, drift{Path: p, Want: v})
			}
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].Path < ds[j].Path })
	return ds
}
