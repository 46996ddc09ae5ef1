package kernel

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/backends"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/semver"
)

func TestCellGoFlags(t *testing.T) {
	const base = "-buildvcs=false '-ldflags=-s -linkmode=internal'"
	for _, tc := range []struct{ backend, want string }{
		{"go", base},
		{"go:ops_parallel", base},
		{"xla:cpu", base + " -tags=cifarlab_nogobackend"},
		{"xla:cuda,memory_fraction=0.5", base + " -tags=cifarlab_nogobackend"},
		{"xla:/opt/pjrt/pjrt_c_api_cpu_plugin.so", base + " -tags=cifarlab_nogobackend"},
	} {
		require.Equal(t, tc.want, cellGoFlags(backend{GoMLX: tc.backend}), "backend %q", tc.backend)
		spec := newKernelSpec(Repo{Dir: "/repo"}, "cpu", goTools{BinDir: "/go/bin"}, backend{GoMLX: tc.backend})
		require.Equal(t, tc.want, spec.Env["GOFLAGS"], "kernelspec on %q", tc.backend)
	}
}

func TestCellGoProxy(t *testing.T) {
	// The install's pinned proxy comes first, then the module cache, then the user's list.
	pins := "/d/share/jupyter/cifarlab/cell-proxy/0123456789abcdef"
	require.Equal(t, "file://"+pins+",file:///root/go/pkg/mod/cache/download,https://proxy.golang.org,direct",
		cellGoProxy(goTools{ModCache: "/root/go/pkg/mod", CellPins: pins}))
	// Installed again from a kernel's own environment (pins of an older go.mod): neither its pins
	// nor the cache is kept first.
	require.Equal(t, "file://"+pins+",file:///root/go/pkg/mod/cache/download,direct",
		cellGoProxy(goTools{ModCache: "/root/go/pkg/mod", CellPins: pins,
			Proxy: "file:///d/share/jupyter/cifarlab/cell-proxy/fedcba9876543210,file:///root/go/pkg/mod/cache/download,direct"}))
	require.Equal(t, pins, cellPinsOf("file://"+pins+",file:///root/go/pkg/mod/cache/download,direct"))
	require.Equal(t, pins, cellPinsOf("file://"+pins+"|direct"))
	require.Empty(t, cellPinsOf("file:///repo/.bin/cell-proxy,file:///root/go/pkg/mod/cache/download,direct"), "the old place, in the checkout")
	require.Empty(t, cellPinsOf("https://proxy.golang.org,direct"))
	for _, tc := range []struct{ modCache, proxy, want string }{
		{"/root/go/pkg/mod", "", "file:///root/go/pkg/mod/cache/download,https://proxy.golang.org,direct"},
		{"/root/go/pkg/mod", "https://proxy.golang.org,direct", "file:///root/go/pkg/mod/cache/download,https://proxy.golang.org,direct"},
		{"/opt/go/pkg/mod", "https://corp.example/go|direct", "file:///opt/go/pkg/mod/cache/download,https://corp.example/go|direct"},
		{"/opt/go/pkg/mod", "off", "file:///opt/go/pkg/mod/cache/download,off"},
		{"/home/a b/mod", "direct", "file:///home/a%20b/mod/cache/download,direct"},
		// Installed again from a kernel's environment: the cache is not put first twice.
		{"/opt/go/pkg/mod", "file:///opt/go/pkg/mod/cache/download,direct", "file:///opt/go/pkg/mod/cache/download,direct"},
		// No module cache known (go env failed), or a relative one: the user's GOPROXY stays.
		{"", "https://proxy.golang.org", ""},
		{"pkg/mod", "", ""},
	} {
		require.Equal(t, tc.want, cellGoProxy(goTools{ModCache: tc.modCache, Proxy: tc.proxy}), "%+v", tc)
	}
	spec := newKernelSpec(Repo{Dir: "/repo"}, "cpu", goTools{BinDir: "/go/bin"}, backend{GoMLX: "go"})
	require.NotContains(t, spec.Env, "GOPROXY")
	require.NotContains(t, spec.Env, "GOTOOLCHAIN", "no toolchain line known")
	spec = newKernelSpec(Repo{Dir: "/repo"}, "cpu", goTools{BinDir: "/go/bin", ModCache: "/m", Toolchain: "go1.27.3", CellPins: pins}, backend{GoMLX: "go"})
	require.Equal(t, "file://"+pins+",file:///m/cache/download,https://proxy.golang.org,direct", spec.Env["GOPROXY"])
	require.Equal(t, "go1.27.3", spec.Env["GOTOOLCHAIN"])
}

// TestCellGoProxyAnswersGoGetFromTheCache runs the `go get` GoNB runs before every cell, in a
// cell's module, with the kernels' GOPROXY, twice: the first run is the warm-up that `cifarlab
// kernel install` does (warmCellGet), and after it every answer a cell's `go get` needs (the
// version lists and go.mod files of the cells' modules, for the retraction and deprecation
// checks, and the checksum database's answers) comes from the module cache: nothing is asked of
// the network. What the first run asks depends on what this machine's module cache held before;
// on a new machine it asks nothing either, which TestToolsPinNoNewerCellModule checks without
// depending on the machine.
func TestCellGoProxyAnswersGoGetFromTheCache(t *testing.T) {
	repo := testRepo(t)
	gt, err := findGoTools(context.Background(), repo)
	require.NoError(t, err)
	require.NotEmpty(t, cellGoProxy(gt), "go env GOMODCACHE: %+v", gt)
	mods, err := buildList(context.Background(), repo, gt)
	require.NoError(t, err)
	gt.CellPins, _, err = ensureCellProxy(t.TempDir(), gt.ModCache, mods)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, writeCellModule(dir, repo))
	out, err := cellGoGet(context.Background(), dir, gt)
	require.NoError(t, err)
	t.Logf("warm-up (what install's warmCellGet asks on this machine): %d requests %q", len(networkRequests(out)), networkRequests(out))
	out, err = cellGoGet(context.Background(), dir, gt)
	require.NoError(t, err)
	require.Empty(t, networkRequests(out), "go get asked the network after the warm-up:\n%s", out)
}

// TestToolsPinNoNewerCellModule: the pinned tools (tools/go.mod, built into the same module
// cache by setup) bring no module that notebook cells build with at a newer version than the
// cells select. If they did, a cell's `go get` on a new machine would take that newer go.mod
// from the cache as the module's latest (for its retraction check), find no checksum for it in
// the checkout's go.sum and ask sum.golang.org: the failure of a fresh clone with gonb v0.11.3
// in go.mod and v0.11.4 in tools/go.mod. This reads the two module graphs, not the machine.
func TestToolsPinNoNewerCellModule(t *testing.T) {
	repo := testRepo(t)
	goCmd := func(dir string, args ...string) string {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
		out, err := cmd.Output()
		require.NoError(t, err, "go %s in %s", strings.Join(args, " "), dir)
		return string(out)
	}
	cells := map[string]string{} // module path -> version selected for cells
	for _, line := range strings.Split(goCmd(repo.Dir, append([]string{"list", "-deps", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}"}, cellImports...)...), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			cells[f[0]] = f[1]
		}
	}
	require.Contains(t, cells, "github.com/janpfeifer/gonb", "cells import gonbui")
	var newer []string
	for _, line := range strings.Split(goCmd(repo.toolsModDir(), "mod", "graph"), "\n") {
		for _, mv := range strings.Fields(line) {
			path, version, ok := strings.Cut(mv, "@")
			if ok && cells[path] != "" && semver.Compare(version, cells[path]) > 0 {
				newer = append(newer, fmt.Sprintf("%s %s (cells: %s)", path, version, cells[path]))
			}
		}
	}
	slices.Sort(newer)
	require.Empty(t, slices.Compact(newer), "tools/go.mod's module graph has newer versions of modules the cells build with: "+
		"raise them in go.mod (`go get MODULE@VERSION && go mod tidy`) so that go.sum pins what a cell's go get checks")
}

// TestCellGoProxyFallsThroughForANewModule: a module the cache does not hold is "not found"
// in it, and the go command asks the next proxy of the kernels' list, here a real HTTP proxy
// (httptest) serving example.com/fresh v1.0.0, so a cell importing a new module still gets it.
func TestCellGoProxyFallsThroughForANewModule(t *testing.T) {
	const mod, version = "example.com/fresh", "v1.0.0"
	var zipBuf bytes.Buffer
	zw := zip.NewWriter(&zipBuf)
	for name, data := range map[string]string{
		"go.mod":   "module " + mod + "\n\ngo 1.21\n",
		"fresh.go": "package fresh\n\n// Answer is the answer.\nconst Answer = 42\n",
	} {
		w, err := zw.Create(mod + "@" + version + "/" + name)
		require.NoError(t, err)
		_, err = w.Write([]byte(data))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path)
		switch r.URL.Path {
		case "/" + mod + "/@v/list":
			fmt.Fprintln(w, version)
		case "/" + mod + "/@v/" + version + ".info":
			fmt.Fprintf(w, `{"Version":%q,"Time":"2026-01-02T03:04:05Z"}`, version)
		case "/" + mod + "/@v/" + version + ".mod":
			fmt.Fprint(w, "module "+mod+"\n\ngo 1.21\n")
		case "/" + mod + "/@v/" + version + ".zip":
			_, _ = w.Write(zipBuf.Bytes())
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	cache := t.TempDir() // an empty module cache: example.com/fresh is in no cache
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module cell\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"),
		[]byte("package main\n\nimport (\n\t\"fmt\"\n\n\t\""+mod+"\"\n)\n\nfunc main() { fmt.Println(fresh.Answer) }\n"), 0o644))
	gt := goTools{ModCache: cache, Proxy: srv.URL}
	require.Equal(t, "file://"+filepath.ToSlash(cache)+"/cache/download,"+srv.URL, cellGoProxy(gt))
	out, err := cellGoGet(context.Background(), dir, gt, "GOMODCACHE="+cache, "GOSUMDB=off")
	require.NoError(t, err)
	require.Contains(t, asked, "/"+mod+"/@v/"+version+".zip", "go get did not fall through to the next proxy:\n%s", out)
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	require.Contains(t, string(gomod), "require "+mod+" "+version)
}

// TestPanickingCellNamesItsLine runs kernel/testdata/panic.ipynb through the real CPU kernel:
// a cell that links cifarlib with cellLinkFlags runs, and its panic's stack trace still names
// the cell and the lines (GoNB maps them from the runtime's pclntab, which -s keeps).
func TestPanickingCellNamesItsLine(t *testing.T) {
	repo := testRepo(t)
	dataDir := installKernels(t, repo)
	run := runNotebook(t, repo, dataDir, filepath.Join(repo.Dir, "kernel", "testdata", "panic.ipynb"), CPUKernel)
	require.Len(t, run.Cells, 1)
	c := run.Cells[0]
	require.Equal(t, "error", c.Status, "%+v", c)
	require.Equal(t, "10\n", c.Stdout, "the cell linked and ran up to the panic")
	require.Contains(t, c.Stderr, "panic: runtime error: index out of range [57] with length 0")
	// The trace has the file and line of each frame (the pclntab): classOf's `return labels[i]`
	// (main.go line 10, the cell's line 4) and the call in the cell's body (17, the cell's 9).
	require.Regexp(t, `main\.classOf\(\.\.\.\)\n\t.*/main\.go:10\n`, c.Stderr)
	require.Regexp(t, `main\.main\(\)\n\t.*/main\.go:17 `, c.Stderr)
	// GoNB maps them to the cell's lines in its error report (HTML), which it builds from whole
	// lines of stderr. (The inline "[[ Cell [1] Line 4 ]]" marks in the stream itself come from
	// matching each chunk the pipe delivers on its own, and the runtime writes a frame's file,
	// ':' and line separately: under load a reference is split and stays unmarked, so those
	// marks cannot be required.)
	require.Contains(t, c.Text, "Cell[1]: Line 4", "classOf's return, in the error report: %q", c.Text)
	require.Contains(t, c.Text, "Cell[1]: Line 9", "the call in the cell's body, in the error report: %q", c.Text)
}

// TestGoBackendInXLACells runs kernel/testdata/gobackend.ipynb through the real CPU kernel: on
// XLA its cells leave the pure-Go backend out (cellGoFlags), backends.New("go") says so and how
// to link it back, and `%goflags -tags=` does link it back.
func TestGoBackendInXLACells(t *testing.T) {
	repo := testRepo(t)
	dataDir := installKernels(t, repo)
	cpu := readSpec(t, dataDir, CPUKernel)
	run := runNotebook(t, repo, dataDir, filepath.Join(repo.Dir, "kernel", "testdata", "gobackend.ipynb"), CPUKernel)
	require.Len(t, run.Cells, 2)
	for _, c := range run.Cells {
		require.Equal(t, "ok", c.Status, "%+v", c)
	}
	linked := "go (pure Go, CPU) <nil>\n"
	if !strings.Contains(cpu.Env["GOFLAGS"], backends.NoGoBackendTag) {
		require.Equal(t, "go", cpu.Env[gomlxBackendEnv], "only the pure-Go CPU kernel links the pure-Go backend")
		require.Equal(t, linked, run.Cells[0].Stdout)
	} else {
		require.Equal(t, `<no backend> backend "go" unavailable: the pure-Go backend is not linked into this program `+
			"(built with -tags cifarlab_nogobackend, as the XLA notebook kernels build cells so that they link faster): "+
			"use the XLA backend the kernel sets in GOMLX_BACKEND, or link the pure-Go backend back into the cells with "+
			"the cell line `%goflags -tags=`\n", run.Cells[0].Stdout)
	}
	require.Equal(t, "%goflags=[\"-tags=\"]\n"+linked, run.Cells[1].Stdout)
}
