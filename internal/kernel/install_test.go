package kernel

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/stretchr/testify/require"
)

// fakeRepo makes a checkout with a go.mod of modulePath and executable stand-ins for the
// pinned tools, enough for Install with SkipTools.
func fakeRepo(t *testing.T) Repo {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+modulePath+"\n\ngo 1.27\n\ntoolchain go1.27.3\n"), 0o644))
	for _, tool := range pinnedTools {
		touch(t, filepath.Join(dir, ".bin", tool.Name))
	}
	touch(t, filepath.Join(dir, ".bin", supervisorName))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tools"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tools", "go.mod"), []byte(`module x/tools
require (
	github.com/janpfeifer/gonb v0.11.4
	golang.org/x/tools v0.47.0
	golang.org/x/tools/gopls v0.23.0
)
`), 0o644))
	return Repo{Dir: dir}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v))
}

func TestInstallWritesBothKernelspecsAndUninstallRemovesThem(t *testing.T) {
	repo := fakeRepo(t)
	t.Setenv(pjrtPluginPathEnv, t.TempDir())
	t.Setenv(CUDAPluginEnv, "")
	t.Setenv(CPUPluginEnv, "")
	t.Setenv("CIFARLAB_XLA_CPU_PLUGIN", "")
	t.Setenv("VIRTUAL_ENV", "")
	t.Setenv("GOMODCACHE", "/cache/mod") // go env reports these: the cells' proxy list starts with the cache
	t.Setenv("GOPROXY", "https://proxy.example.com|direct")
	parent := t.TempDir()
	dataDir := filepath.Join(parent, "share", "jupyter")
	goBin, err := goBinDir()
	require.NoError(t, err)

	opts := InstallOptions{Repo: repo, DataDir: dataDir, SkipTools: true, Backends: BackendOptions{CUDA: "xla:cuda"}}
	res, err := Install(context.Background(), opts)
	require.NoError(t, err)
	require.Len(t, res.Kernels, 2)
	require.True(t, res.Kernels[0].Changed)
	require.True(t, res.Kernels[1].Changed)

	// The cells' pins (fakeRepo's build list is empty) live with the kernelspecs.
	pins := cellPinsDir(dataDir, nil)
	require.DirExists(t, pins)
	require.Regexp(t, `/cifarlab/cell-proxy/[0-9a-f]{16}$`, pins)
	var cpu, cuda KernelSpec
	readJSON(t, filepath.Join(dataDir, "kernels", CPUKernel, "kernel.json"), &cpu)
	readJSON(t, filepath.Join(dataDir, "kernels", CUDAKernel, "kernel.json"), &cuda)
	require.Equal(t, KernelSpec{
		Argv: []string{filepath.Join(repo.Dir, ".bin", "cifarlab-kernel"), "--",
			filepath.Join(repo.Dir, ".bin", "gonb"), "--kernel", "{connection_file}", "--go_work=" + repo.Dir},
		DisplayName:   "Go (cifarlab, CPU)",
		Language:      "go",
		InterruptMode: "message",
		Env: map[string]string{
			"PATH":                  filepath.Join(repo.Dir, ".bin") + ":" + goBin + ":${PATH}",
			"GOMLX_BACKEND":         "go",
			"GOMLX_NO_AUTO_INSTALL": "1",
			"CIFARLAB_KERNEL":       "cpu",
			"CIFARLAB_REPO":         repo.Dir,
			"GOWORK":                "",
			"GOFLAGS":               "-buildvcs=false '-ldflags=-s -linkmode=internal'",
			"GOPROXY":               "file://" + pins + ",file:///cache/mod/cache/download,https://proxy.example.com|direct",
			"GOTOOLCHAIN":           "go1.27.3",
			"GO111MODULE":           "on",
			"CGO_ENABLED":           "1",
			"GOOS":                  runtime.GOOS,
			"GOARCH":                runtime.GOARCH,
		},
		Metadata: SpecMetadata{Cifarlab: KernelInfo{Kernel: "cpu", Repo: repo.Dir, Backend: "go", BackendReason: "pure-Go backend (no XLA CPU plugin found)"}},
	}, cpu)
	require.Equal(t, "Go (cifarlab, CUDA)", cuda.DisplayName)
	require.Equal(t, "xla:cuda", cuda.Env["GOMLX_BACKEND"])
	require.Equal(t, "-buildvcs=false '-ldflags=-s -linkmode=internal' -tags=cifarlab_nogobackend", cuda.Env["GOFLAGS"],
		"an XLA kernel's cells leave the pure-Go backend out")
	require.Equal(t, cpu.Env["GOPROXY"], cuda.Env["GOPROXY"])
	require.Equal(t, "cuda", cuda.Env["CIFARLAB_KERNEL"])
	require.Equal(t, cpu.Argv, cuda.Argv)

	manifestBefore, err := os.ReadFile(manifestPath(dataDir))
	require.NoError(t, err)
	var man manifest
	require.NoError(t, json.Unmarshal(manifestBefore, &man))
	require.Equal(t, []string{
		filepath.Join(dataDir, "kernels", CPUKernel, "kernel.json"),
		filepath.Join(dataDir, "kernels", CPUKernel, "logo-svg.svg"),
		filepath.Join(dataDir, "kernels", CUDAKernel, "kernel.json"),
		filepath.Join(dataDir, "kernels", CUDAKernel, "logo-svg.svg"),
	}, man.Files)
	require.ElementsMatch(t, []string{
		filepath.Join(parent, "share"), dataDir, filepath.Join(dataDir, "kernels"),
		filepath.Join(dataDir, "kernels", CPUKernel), filepath.Join(dataDir, "kernels", CUDAKernel),
		filepath.Join(dataDir, "cifarlab"), filepath.Join(dataDir, "cifarlab", "cell-proxy"),
	}, man.Dirs)
	require.Equal(t, []string{pins}, man.Trees)

	// Twice is harmless: nothing changes, the manifest stays the same.
	res, err = Install(context.Background(), opts)
	require.NoError(t, err)
	require.False(t, res.Kernels[0].Changed)
	require.False(t, res.Kernels[1].Changed)
	manifestAfter, err := os.ReadFile(manifestPath(dataDir))
	require.NoError(t, err)
	require.Equal(t, string(manifestBefore), string(manifestAfter))

	// Someone else's kernel and Jupyter's runtime files survive the uninstall.
	other := touch(t, filepath.Join(dataDir, "kernels", "python3", "kernel.json"))
	runtime := touch(t, filepath.Join(dataDir, "runtime", "jupyter_cookie_secret"))
	un, err := Uninstall(dataDir)
	require.NoError(t, err)
	require.ElementsMatch(t, append(append([]string{}, man.Files...), manifestPath(dataDir), pins, filepath.Join(dataDir, "cifarlab", "cell-proxy"),
		filepath.Join(dataDir, "kernels", CPUKernel), filepath.Join(dataDir, "kernels", CUDAKernel), filepath.Join(dataDir, "cifarlab")), un.Removed)
	require.ElementsMatch(t, []string{filepath.Join(parent, "share"), dataDir, filepath.Join(dataDir, "kernels")}, un.Kept)
	require.FileExists(t, other)
	require.FileExists(t, runtime)
	require.NoDirExists(t, filepath.Join(dataDir, "kernels", CPUKernel))
	require.NoDirExists(t, filepath.Join(dataDir, "cifarlab"))

	_, err = Uninstall(dataDir)
	require.ErrorContains(t, err, "no cifarlab kernel manifest at "+manifestPath(dataDir))
}

func TestUninstallOfAFreshInstallLeavesNothing(t *testing.T) {
	repo := fakeRepo(t)
	t.Setenv(pjrtPluginPathEnv, t.TempDir())
	parent := t.TempDir()
	dataDir := filepath.Join(parent, "jupyter")
	_, err := Install(context.Background(), InstallOptions{Repo: repo, DataDir: dataDir, SkipTools: true, Backends: BackendOptions{CUDA: "xla:cuda"}})
	require.NoError(t, err)
	un, err := Uninstall(dataDir)
	require.NoError(t, err)
	require.Empty(t, un.Kept)
	entries, err := os.ReadDir(parent)
	require.NoError(t, err)
	require.Empty(t, entries, "uninstall must remove every file and folder install created")
}

func TestInstallRefusesMissingTools(t *testing.T) {
	repo := fakeRepo(t)
	require.NoError(t, os.Remove(repo.Tool("gopls")))
	_, err := Install(context.Background(), InstallOptions{Repo: repo, DataDir: t.TempDir(), SkipTools: true})
	require.EqualError(t, err, repo.Tool("gopls")+" is missing: build the pinned tools with `cd "+repo.toolsModDir()+
		" && GOBIN="+repo.binDir()+" go install tool` (or run kernel/setup.sh)")
}

func TestCheckToolsReadsBuildInfo(t *testing.T) {
	repo := fakeRepo(t)
	require.NoError(t, os.MkdirAll(repo.toolsModDir(), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo.toolsModDir(), "go.mod"), []byte(`module x/tools
go 1.26.0
require (
	github.com/janpfeifer/gonb v0.11.4
	golang.org/x/tools v0.47.0
)
`), 0o644))
	// A real Go binary that is not gonb: this test binary.
	self, err := os.Executable()
	require.NoError(t, err)
	data, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(repo.Tool("gonb"), data, 0o755))
	require.NoError(t, os.Remove(repo.Tool("goimports")))

	sts, err := checkTools(repo)
	require.NoError(t, err)
	require.Len(t, sts, 3)
	require.EqualError(t, sts[0].Err, repo.Tool("gonb")+" is a build of github.com/cifarlab/cifarlab/internal/kernel.test, not of github.com/janpfeifer/gonb")
	require.EqualError(t, sts[1].Err, "not built: "+repo.Tool("goimports")+" is missing")
	require.EqualError(t, sts[2].Err, "tools/go.mod has no require line for golang.org/x/tools/gopls: add the tool with `go get -tool golang.org/x/tools/gopls@VERSION` in tools/")
	for _, st := range sts {
		require.False(t, st.OK())
	}
}

// The real pinned tools, when kernel/setup.sh has built them, are the pinned versions.
func TestRepositoryToolsArePinned(t *testing.T) {
	repo := testRepo(t)
	if !fileExists(repo.Tool("gonb")) {
		requireLab(t, repo)
	}
	sts, err := checkTools(repo)
	require.NoError(t, err)
	got := map[string]string{}
	for _, st := range sts {
		require.NoError(t, st.Err)
		require.True(t, st.OK(), st.String())
		got[st.Name] = st.Have
	}
	require.Equal(t, "v0.11.5", got["gonb"])
	require.Equal(t, "v0.23.0", got["gopls"])
	require.True(t, strings.HasPrefix(got["goimports"], "v0."), got["goimports"])
}

func TestDataDirFor(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv(jupyterDataDirEnv, "")
	d, err := DataDirFor("", "")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(home, ".local/share/jupyter"), d)

	t.Setenv("XDG_DATA_HOME", "/xdg")
	d, err = DataDirFor("", "")
	require.NoError(t, err)
	require.Equal(t, "/xdg/jupyter", d)

	t.Setenv(jupyterDataDirEnv, "/env/jupyter")
	d, err = DataDirFor("", "")
	require.NoError(t, err)
	require.Equal(t, "/env/jupyter", d)

	d, err = DataDirFor("", "/usr/local")
	require.NoError(t, err)
	require.Equal(t, "/usr/local/share/jupyter", d)

	d, err = DataDirFor("/explicit", "")
	require.NoError(t, err)
	require.Equal(t, "/explicit", d)

	_, err = DataDirFor("/a", "/b")
	require.EqualError(t, err, "give either --jupyter-data-dir or --prefix, not both")
}

// A pip-installed jax CUDA plugin gets the links go-xla and the plugin's RPATH need; the
// links (not their targets) go away on uninstall.
func TestInstallLinksPipCUDAPlugin(t *testing.T) {
	repo := fakeRepo(t)
	t.Setenv(pjrtPluginPathEnv, t.TempDir())
	site := t.TempDir()
	jax := touch(t, filepath.Join(site, "jax_plugins/xla_cuda13/xla_cuda_plugin.so"))
	ptxas := touch(t, filepath.Join(site, "nvidia/cu13/bin/ptxas"))
	dataDir := filepath.Join(t.TempDir(), "jupyter")
	_, err := Install(context.Background(), InstallOptions{Repo: repo, DataDir: dataDir, SkipTools: true,
		Backends: BackendOptions{CUDAPlugin: jax}})
	require.NoError(t, err)

	linkDir := filepath.Join(dataDir, "cifarlab", "pjrt-cuda")
	spec := readSpec(t, dataDir, CUDAKernel)
	require.Equal(t, "xla:cuda", spec.Env["GOMLX_BACKEND"])
	require.Equal(t, filepath.Join(linkDir, "jax_plugins/xla_cuda13"), spec.Env["PJRT_PLUGIN_LIBRARY_PATH"])
	require.Equal(t, "--xla_gpu_cuda_data_dir="+filepath.Join(site, "nvidia/cu13"), spec.Env["XLA_FLAGS"])
	target, err := os.Readlink(filepath.Join(linkDir, "jax_plugins/xla_cuda13/pjrt_c_api_cuda_plugin.so"))
	require.NoError(t, err)
	require.Equal(t, jax, target)
	// $ORIGIN/../../nvidia of the linked plugin reaches pip's libraries.
	require.FileExists(t, filepath.Join(linkDir, "jax_plugins/xla_cuda13", "../../nvidia/cu13/bin/ptxas"))
	require.Equal(t, map[string]string{"cuda": filepath.Join(linkDir, "jax_plugins/xla_cuda13/pjrt_c_api_cuda_plugin.so")},
		withPluginPath(t, spec.Env["PJRT_PLUGIN_LIBRARY_PATH"], plugins.FindFiles), "go-xla's search finds it by name")
	cpu := readSpec(t, dataDir, CPUKernel)
	require.NotContains(t, cpu.Env, "PJRT_PLUGIN_LIBRARY_PATH")

	// Again: unchanged links.
	_, err = Install(context.Background(), InstallOptions{Repo: repo, DataDir: dataDir, SkipTools: true, Backends: BackendOptions{CUDAPlugin: jax}})
	require.NoError(t, err)

	_, err = Uninstall(dataDir)
	require.NoError(t, err)
	require.NoDirExists(t, filepath.Join(dataDir, "cifarlab"))
	require.FileExists(t, jax)
	require.FileExists(t, ptxas)
}

func withPluginPath[T any](t *testing.T, path string, fn func() T) T {
	t.Setenv(pjrtPluginPathEnv, path)
	return fn()
}
