package kernel

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckKernelSpec(t *testing.T) {
	repo := fakeRepo(t)
	goBin, err := goBinDir()
	require.NoError(t, err)
	good := newKernelSpec(repo, "cpu", goTools{BinDir: goBin}, backend{GoMLX: "go"})
	listed := func(s KernelSpec) map[string]listedSpec {
		return map[string]listedSpec{CPUKernel: {ResourceDir: "/d/kernels/cifarlab-cpu", Spec: s}, "python3": {}}
	}

	c := checkKernelSpec(repo, CPUKernel, listed(good), goTools{})
	require.Equal(t, Check{Name: "kernelspec cifarlab-cpu", Status: StatusOK, Required: true,
		Detail: `"Go (cifarlab, CPU)" in /d/kernels/cifarlab-cpu, GOMLX_BACKEND=go`}, c)

	c = checkKernelSpec(repo, CUDAKernel, listed(good), goTools{})
	require.Equal(t, Check{Name: "kernelspec cifarlab-cuda", Status: StatusFail, Required: true,
		Detail: "not installed (Jupyter lists: cifarlab-cpu, python3)", Fix: "cifarlab kernel install"}, c)

	broken := newKernelSpec(repo, "cpu", goTools{BinDir: goBin}, backend{GoMLX: "xla:/gone/xla_cuda_plugin.so"})
	broken.Argv[0] = "/gone/gonb"
	broken.Argv = broken.Argv[:3]
	broken.Env["PATH"] = "/nowhere"
	t.Setenv("PATH", "/also-nowhere")
	c = checkKernelSpec(repo, CPUKernel, listed(broken), goTools{})
	require.Equal(t, StatusFail, c.Status)
	require.Equal(t, `"Go (cifarlab, CPU)" in /d/kernels/cifarlab-cpu, GOMLX_BACKEND=xla:/gone/xla_cuda_plugin.so: `+
		`kernel binary "/gone/gonb" missing; go not on the kernel's PATH; goimports not on the kernel's PATH; gopls not on the kernel's PATH; `+
		`no --go_work: cells would not import this repository's cifarlib; GOMLX_BACKEND names a missing plugin: xla:/gone/xla_cuda_plugin.so`, c.Detail)

	// A kernelspec written for another module cache or proxy list: cells would ask the network.
	gt := goTools{BinDir: goBin, ModCache: "/cache/mod", Proxy: "https://proxy.example.com", CellPins: "/d/cifarlab/cell-proxy/0123456789abcdef"}
	c = checkKernelSpec(repo, CPUKernel, listed(newKernelSpec(repo, "cpu", gt, backend{GoMLX: "go"})), gt)
	require.Equal(t, StatusOK, c.Status, "%+v", c)
	moved := gt
	moved.ModCache = "/new/mod"
	c = checkKernelSpec(repo, CPUKernel, listed(newKernelSpec(repo, "cpu", gt, backend{GoMLX: "go"})), moved)
	require.Equal(t, Check{Name: "kernelspec cifarlab-cpu", Status: StatusWarn, Required: true,
		Detail: `"Go (cifarlab, CPU)" in /d/kernels/cifarlab-cpu, GOMLX_BACKEND=go; its GOPROXY ` +
			`"file:///d/cifarlab/cell-proxy/0123456789abcdef,file:///cache/mod/cache/download,https://proxy.example.com" is not the cells' proxy for this go command's ` +
			`GOMODCACHE and GOPROXY ("file:///d/cifarlab/cell-proxy/0123456789abcdef,file:///new/mod/cache/download,https://proxy.example.com"): cells would look for modules in another cache or proxy than go does`,
		Fix: "cifarlab kernel install"}, c)

	// A kernelspec written before go.mod named its toolchain (or for another one): its cells
	// build with whatever go its PATH finds.
	pinned := gt
	pinned.Toolchain = "go1.27.3"
	c = checkKernelSpec(repo, CPUKernel, listed(newKernelSpec(repo, "cpu", gt, backend{GoMLX: "go"})), pinned)
	require.Equal(t, StatusFail, c.Status, "%+v", c)
	require.Contains(t, c.Detail, "its cells build without GOTOOLCHAIN=go1.27.3 (go.mod's toolchain line): with "+goBin+"/go as it is")
	require.Equal(t, "cifarlab kernel install", c.Fix)

	withPlugins := newKernelSpec(repo, "cuda", goTools{BinDir: goBin}, backend{GoMLX: "xla:cuda", Env: map[string]string{pjrtPluginPathEnv: t.TempDir()}})
	c = checkKernelSpec(repo, CPUKernel, listed(withPlugins), goTools{})
	require.Equal(t, StatusFail, c.Status)
	require.Contains(t, c.Detail, "holds no loadable plugin file")

	other := fakeRepo(t)
	c = checkKernelSpec(repo, CPUKernel, listed(newKernelSpec(other, "cpu", goTools{BinDir: goBin}, backend{GoMLX: "go"})), goTools{})
	require.Equal(t, StatusWarn, c.Status)
	require.Contains(t, c.Detail, "; compiles against "+other.Dir+", not "+repo.Dir)
}

func TestReportText(t *testing.T) {
	r := Report{Checks: []Check{
		{Name: "go", Status: StatusOK, Detail: "go1.26.8", Required: true},
		{Name: "GPUs", Status: StatusAbsent, Detail: "none", Fix: "optional"},
		{Name: "jupyterlab", Status: StatusFail, Detail: "not found", Fix: "bash kernel/setup.sh", Required: true},
	}}
	var buf bytes.Buffer
	r.WriteText(&buf)
	require.Equal(t, "[ ok ] go                         go1.26.8\n"+
		"[ -- ] GPUs                       none  → fix: optional\n"+
		"[FAIL] jupyterlab                 not found  → fix: bash kernel/setup.sh\n"+
		"doctor: required items missing or broken: jupyterlab\n", buf.String())
}

// Doctor on a checkout without Jupyter reports the missing pieces with fixes and fails.
func TestDoctorWithoutJupyter(t *testing.T) {
	repo := fakeRepo(t)
	t.Setenv("PATH", filepath.Dir(mustGoBin(t))) // go only: no jupyter, no nvidia-smi
	t.Setenv(pjrtPluginPathEnv, t.TempDir())
	t.Setenv(CPUPluginEnv, "")
	t.Setenv("CIFARLAB_XLA_CPU_PLUGIN", "")
	t.Setenv("VIRTUAL_ENV", "")
	t.Setenv(CUDAPluginEnv, "")
	t.Setenv("CIFARLAB_CUDA_SITE", "")
	probed := false
	r := Doctor(context.Background(), DoctorOptions{Repo: repo, Probes: []Probe{func(context.Context) []Check {
		probed = true
		return []Check{{Name: "probe", Status: StatusOK, Detail: "ran"}}
	}}})
	require.False(t, r.OK)
	require.True(t, probed)
	byName := map[string]Check{}
	for _, c := range r.Checks {
		byName[c.Name] = c
	}
	require.Equal(t, StatusOK, byName["repository"].Status)
	require.Equal(t, StatusOK, byName["go"].Status)
	require.Equal(t, StatusFail, byName["gonb"].Status, "the fake gonb has no Go build info")
	require.Contains(t, byName["gonb"].Detail, "cannot read the build information of "+repo.Tool("gonb"))
	require.Equal(t, "cifarlab kernel install (or: cd "+repo.toolsModDir()+" && GOBIN="+repo.binDir()+" go install tool)", byName["gonb"].Fix)
	require.Equal(t, Check{Name: "jupyter", Status: StatusFail, Detail: "not found", Fix: installHint, Required: true}, byName["jupyter"])
	require.Equal(t, StatusFail, byName["jupyterlab"].Status)
	require.Equal(t, StatusAbsent, byName["XLA CPU plugin"].Status)
	// Setup installs the CUDA plugin only on a GPU machine: doctor says how to get it anyway.
	require.Equal(t, StatusAbsent, byName["CUDA plugin"].Status)
	require.False(t, byName["CUDA plugin"].Required)
	require.Contains(t, byName["CUDA plugin"].Fix, "CIFARLAB_CUDA=1 bash kernel/setup.sh installs them anyway")
	require.Equal(t, StatusAbsent, byName["GPUs"].Status)
	require.False(t, byName["GPUs"].Required)
	require.Equal(t, "ran", byName["probe"].Detail)
}

func mustGoBin(t *testing.T) string {
	t.Helper()
	d, err := goBinDir()
	require.NoError(t, err)
	return filepath.Join(d, "go")
}

// TestCheckCellModules: the versions cells build with, and the two drifts doctor warns of: a
// pinned proxy that go.mod has moved away from, and a running kernel's cell module that requires
// a newer version of a module of go.mod (read from GoNB's folder, tmp/gonb_ID, as GoNB leaves it).
func TestCheckCellModules(t *testing.T) {
	repo := testRepo(t)
	ctx := context.Background()
	gt, err := findGoTools(ctx, repo)
	require.NoError(t, err)
	want, err := buildList(ctx, repo, gt)
	require.NoError(t, err)
	gomlx := want["github.com/gomlx/gomlx"]
	require.NotEmpty(t, gomlx)
	copied := Repo{Dir: t.TempDir()}
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(repo.Dir, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(copied.Dir, f), data, 0o644))
	}
	require.NoError(t, os.Symlink(filepath.Join(repo.Dir, "third_party"), filepath.Join(copied.Dir, "third_party"))) // go.mod's replace
	tmp := t.TempDir()

	c := checkCellModules(ctx, copied, gt, tmp)
	require.Equal(t, StatusWarn, c.Status, "%+v", c)
	require.Contains(t, c.Detail, "the kernels name no pinned proxy")

	data := t.TempDir()
	gt.CellPins = cellPinsDir(data, want)
	c = checkCellModules(ctx, copied, gt, tmp)
	require.Equal(t, StatusWarn, c.Status, "%+v", c)
	require.Contains(t, c.Detail, "no pinned proxy in "+gt.CellPins)

	_, written, err := ensureCellProxy(data, gt.ModCache, want)
	require.NoError(t, err)
	require.True(t, written)
	c = checkCellModules(ctx, copied, gt, tmp)
	require.Equal(t, StatusOK, c.Status, "%+v", c)
	require.Contains(t, c.Detail, fmt.Sprintf("cells build with go.mod's versions of %d modules (gomlx/gomlx %s, ", len(want), gomlx))

	// The kernels were installed with another go.mod: their pins are another build list's.
	stale := maps.Clone(want)
	stale["github.com/gomlx/gomlx"] = "v0.28.8"
	gt.CellPins, _, err = ensureCellProxy(data, "", stale)
	require.NoError(t, err)
	c = checkCellModules(ctx, copied, gt, tmp)
	require.Equal(t, StatusWarn, c.Status)
	require.Contains(t, c.Detail, "the pinned proxy differs from go.mod (changed since the kernels were installed): github.com/gomlx/gomlx v0.28.8 (go.mod: "+gomlx+")")
	require.Equal(t, "cifarlab kernel install", c.Fix)

	gt.CellPins, _, err = ensureCellProxy(data, "", want)
	require.NoError(t, err)
	kernel := filepath.Join(tmp, "gonb_1a2b3c4d")
	require.NoError(t, os.Mkdir(kernel, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(kernel, "go.work"), []byte("go 1.27.3\n\nuse (\n\t.\n\t"+copied.Dir+"\n)\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(kernel, "go.mod"), []byte("module gonb_1a2b3c4d\n\ngo 1.27.3\n\nreplace "+modulePath+" => "+copied.Dir+
		"\n\nrequire (\n\tgithub.com/gomlx/gomlx v0.28.99\n\texample.com/fresh v1.0.0\n\tgithub.com/pkg/errors v0.0.1\n)\n"), 0o644))
	c = checkCellModules(ctx, copied, gt, tmp)
	require.Equal(t, StatusWarn, c.Status)
	require.Contains(t, c.Detail, "the running kernel gonb_1a2b3c4d builds its cells with github.com/gomlx/gomlx v0.28.99 (go.mod: "+gomlx+")")
	require.NotContains(t, c.Detail, "example.com/fresh", "a module go.mod does not have is the cell's own")
	require.NotContains(t, c.Detail, "github.com/pkg/errors", "an older requirement does not change what the cell builds with")
	require.Contains(t, c.Fix, "restart that kernel")
}

// TestCheckGoToolchain: doctor says which Go builds the cells (go.mod's toolchain line, as the
// kernelspecs set it), and what a GOTOOLCHAIN of the user's means: the kernels replace it, and a
// terminal's go build would run an older Go only with GOTOOLCHAIN=local on an older go, or an
// older release named exactly.
func TestCheckGoToolchain(t *testing.T) {
	repo := fakeRepo(t) // go.mod: go 1.27, toolchain go1.27.3
	ctx := context.Background()
	gt, err := findGoTools(ctx, repo)
	require.NoError(t, err)
	require.Equal(t, "go1.27.3", gt.Toolchain)
	require.Equal(t, "go1.27.3", gt.Version, "the go command on PATH runs go.mod's toolchain")
	for _, tc := range []struct {
		user   string
		status Status
		detail string
	}{
		{"go1.27.3", StatusOK, ""},
		{"go1.26.8", StatusWarn, "; GOTOOLCHAIN=go1.26.8 ($GOTOOLCHAIN) is not what the kernels use: they set GOTOOLCHAIN=go1.27.3, so notebooks build; " +
			"in a terminal, go build and go test here would run go1.26.8 and fail"},
		{"go1.26.8+auto", StatusOK, "; your GOTOOLCHAIN=go1.26.8+auto does not apply to the kernels: they set GOTOOLCHAIN=go1.27.3"},
		// The go on PATH here is go1.27.3 itself (kernel/run-tests.sh puts it first): local runs it.
		{"local", StatusOK, "; your GOTOOLCHAIN=local does not apply to the kernels: they set GOTOOLCHAIN=go1.27.3"},
	} {
		t.Setenv("GOTOOLCHAIN", tc.user)
		c := checkGo(ctx, repo)
		require.Equal(t, tc.status, c.Status, "GOTOOLCHAIN=%s: %+v", tc.user, c)
		require.True(t, strings.HasSuffix(c.Detail, "(go.mod needs 1.27)"+tc.detail), "GOTOOLCHAIN=%s: %q", tc.user, c.Detail)
		require.Contains(t, c.Detail, "cells build with go1.27.3 ("+gt.BinDir+", GOTOOLCHAIN=go1.27.3 from go.mod's toolchain line)")
	}

	// A toolchain that cannot be had (here: a release that does not exist, with no proxy) fails,
	// with the fix.
	require.NoError(t, os.WriteFile(filepath.Join(repo.Dir, "go.mod"), []byte("module "+modulePath+"\n\ngo 1.27\n\ntoolchain go1.27.99\n"), 0o644))
	t.Setenv("GOTOOLCHAIN", "")
	t.Setenv("GOPROXY", "off")
	c := checkGo(ctx, repo)
	require.Equal(t, StatusFail, c.Status, "%+v", c)
	require.Contains(t, c.Detail, "cells build with go1.27.99 (go.mod's toolchain line), but the go command on PATH (go1.27.3, ")
	require.Contains(t, c.Fix, "bash kernel/setup.sh (it fetches go1.27.99 through the Go module proxy), or install Go 1.27.99")
}
