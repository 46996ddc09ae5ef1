package kernel

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The module of the pinned-cell test: required by the checkout (go.mod), small, so that the cell
// builds in seconds from a module cache of its own.
const (
	pinnedModule = "github.com/nlpodyssey/gopickle"
	freshModule  = "example.com/fresh"
)

// TestCellsBuildGoModVersions runs kernel/testdata/pinned.ipynb through the real CPU kernel with a
// scratch module cache (a copy of this machine's, hard links) whose list holds a newer version of a
// module the checkout requires (gopickle: go.mod's version plus one, a real copy of it under the
// new number), as another project's `go mod download` would leave it. The cell imports that
// module and prints the version linked into its binary (debug.ReadBuildInfo): it must be go.mod's,
// although GoNB's `go get` resolves the cell's imports against the module cache first. A module
// the checkout does not require (example.com/fresh, only in the scratch cache) still resolves, to
// the newest version there. Nothing reaches the network (GOPROXY=off after the cache). At 4805295
// (no pinned proxy) the cell printed the newer version.
func TestCellsBuildGoModVersions(t *testing.T) {
	repo := testRepo(t)
	requireLab(t, repo)
	mod, err := readGoMod(filepath.Join(repo.Dir, "go.mod"))
	require.NoError(t, err)
	want := mod.Require[pinnedModule]
	require.NotEmpty(t, want, "go.mod requires %s", pinnedModule)
	newer := bumpPatch(t, want)

	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	realCache := strings.TrimSpace(string(out))
	cache := scratchModCache(t, realCache)
	dl := filepath.Join(cache, "cache", "download")

	// The newer version of the required module: v0.2.0's files under the new number.
	src := filepath.Join(dl, "github.com", "nlpodyssey", "gopickle", "@v")
	versionFiles(t, src, pinnedModule, want, newer)
	// A module the checkout does not require, in the scratch cache only.
	dst := filepath.Join(dl, "example.com", "fresh", "@v")
	require.NoError(t, os.MkdirAll(dst, 0o755))
	writeModuleVersion(t, dst, freshModule, "v1.0.0", map[string]string{
		"go.mod":   "module " + freshModule + "\n\ngo 1.21\n",
		"fresh.go": "package fresh\n\n// Answer is the answer.\nconst Answer = 42\n",
	})
	replaceFile(t, filepath.Join(dst, "list"), "v1.0.0\n")

	t.Setenv("GOMODCACHE", cache)
	t.Setenv("GOPROXY", "off")                          // after the scratch cache: nothing from the network
	t.Setenv("GONOSUMDB", pinnedModule+","+freshModule) // their scratch versions are not in sum.golang.org
	t.Cleanup(func() { chmodDirs(cache) })
	dataDir := installKernels(t, repo)
	run := runNotebook(t, repo, dataDir, filepath.Join(repo.Dir, "kernel", "testdata", "pinned.ipynb"), CPUKernel)
	require.Len(t, run.Cells, 2)
	for _, c := range run.Cells {
		require.Equal(t, "ok", c.Status, "%+v", c)
	}
	require.Equal(t, pinnedModule+" "+want+"\n", run.Cells[0].Stdout,
		"the cell must link go.mod's %s, not the newer %s that the module cache lists", want, newer)
	require.Equal(t, freshModule+" v1.0.0 42\n", run.Cells[1].Stdout, "a module the checkout does not require still resolves")
}

// scratchModCache returns a copy of the module cache real made of hard links (cp -al: seconds,
// no space), in which a test may replace files (never write into one: it is the real cache's).
func scratchModCache(t *testing.T, real string) string {
	t.Helper()
	cache := filepath.Join(t.TempDir(), "mod")
	out, err := exec.Command("cp", "-al", real, cache).CombinedOutput()
	if err != nil {
		chmodDirs(cache)
		t.Skipf("cannot hard-link the module cache %s into %s (another file system?): %v %s", real, cache, err, out)
	}
	return cache
}

// replaceFile replaces path with a new file holding data: a new inode, so that a hard link to
// the real module cache is not written through.
func replaceFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.Remove(path); !errors.Is(err, fs.ErrNotExist) {
		require.NoError(t, err)
	}
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

// versionFiles adds version newer of module to the proxy folder dir (GOMODCACHE/cache/download/
// MODULE/@v), as a copy of version have: its .info, .mod and .zip (the zip's paths renamed),
// and lists it.
func versionFiles(t *testing.T, dir, module, have, newer string) {
	t.Helper()
	zr, err := zip.OpenReader(filepath.Join(dir, have+".zip"))
	require.NoError(t, err, "the module cache holds %s@%s (go mod download)", module, have)
	defer zr.Close()
	files := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		require.NoError(t, err)
		data, err := io.ReadAll(rc)
		require.NoError(t, err)
		rc.Close()
		files[strings.TrimPrefix(f.Name, module+"@"+have+"/")] = string(data)
	}
	writeModuleVersion(t, dir, module, newer, files)
	list, err := os.ReadFile(filepath.Join(dir, "list"))
	require.NoError(t, err)
	replaceFile(t, filepath.Join(dir, "list"), string(list)+newer+"\n")
}

// writeModuleVersion writes module@version's .info, .mod and .zip into the proxy folder dir.
func writeModuleVersion(t *testing.T, dir, module, version string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, data := range files {
		w, err := zw.Create(module + "@" + version + "/" + name)
		require.NoError(t, err)
		_, err = w.Write([]byte(data))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, version+".zip"), buf.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, version+".mod"), []byte(files["go.mod"]), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, version+".info"), []byte(`{"Version":"`+version+`","Time":"2026-11-01T00:00:00Z"}`+"\n"), 0o644))
}

// bumpPatch returns v with its patch number plus one (v0.2.0 -> v0.2.1).
func bumpPatch(t *testing.T, v string) string {
	t.Helper()
	i := strings.LastIndex(v, ".")
	require.Positive(t, i, v)
	n, err := strconv.Atoi(v[i+1:])
	require.NoError(t, err, "%s is a release version", v)
	return v[:i+1] + strconv.Itoa(n+1)
}

// chmodDirs makes the folders under root writable, so that t.TempDir can remove them; files are
// left alone (in a hard-linked copy they are the real module cache's).
func chmodDirs(root string) {
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
}
