package plugins

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/repo"
	"github.com/stretchr/testify/require"
)

// touch creates a file that is not a real plugin (and its folders).
func touch(t *testing.T, path string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte("not a real plugin"), 0o755))
	return path
}

// fakeCheckout makes a folder holding this module's go.mod.
func fakeCheckout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+repo.ModulePath+"\n\ngo 1.26\n"), 0o644))
	return dir
}

// realXLACPUOrSkip returns the installed XLA CPU plugin; without one it skips the test, or fails
// it when CI asks for the plugin (CI=true and CIFARLAB_REQUIRE_XLA_CPU=1).
func realXLACPUOrSkip(t *testing.T) Location {
	t.Helper()
	loc, err := FindXLACPU("")
	require.NoError(t, err)
	if loc.Path == "" {
		if os.Getenv("CI") == "true" && os.Getenv("CIFARLAB_REQUIRE_XLA_CPU") == "1" {
			t.Fatalf("CIFARLAB_REQUIRE_XLA_CPU=1 but no XLA CPU plugin was found: %s", XLACPUInstallHint)
		}
		t.Skip("the XLA CPU plugin is not installed (pip install --no-deps lammps-jax-pjrt-cpu into REPO/.venv)")
	}
	return loc
}

// TestFindXLACPUPluginSearch checks the search order with plugin files made up in temporary
// folders: explicit variable, then the checkout's .venv (newest python3.N), then $VIRTUAL_ENV.
func TestFindXLACPUPluginSearch(t *testing.T) {
	if GoXLAName("cpu") != "" {
		t.Skip("a cpu plugin in go-xla's folders takes precedence over the venvs here")
	}
	rel := "site-packages/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so"
	checkout := fakeCheckout(t)
	touch(t, filepath.Join(checkout, ".venv/lib/python3.9", rel))
	newest := touch(t, filepath.Join(checkout, ".venv/lib/python3.11", rel))
	other := t.TempDir()
	active := touch(t, filepath.Join(other, "venv/lib/python3.12", rel))
	explicit := touch(t, filepath.Join(other, "my plugin.so"))

	t.Setenv(XLACPUEnv, "")
	t.Setenv(KernelCPUEnv, "")
	t.Setenv("VIRTUAL_ENV", filepath.Join(other, "venv"))
	t.Setenv(repo.Env, checkout)
	loc, err := FindXLACPU("")
	require.NoError(t, err)
	require.Equal(t, Location{Path: newest, Source: "the venv " + filepath.Join(checkout, ".venv")}, loc)

	t.Setenv(repo.Env, other) // not a checkout: only $VIRTUAL_ENV is left
	loc, err = FindXLACPU("")
	require.NoError(t, err)
	require.Equal(t, Location{Path: active, Source: "the active venv $VIRTUAL_ENV=" + filepath.Join(other, "venv")}, loc)
	loc, err = FindXLACPU(checkout)
	require.NoError(t, err)
	require.Equal(t, newest, loc.Path, "an explicit checkout wins over $CIFARLAB_REPO")

	t.Setenv("VIRTUAL_ENV", "")
	loc, err = FindXLACPU("")
	require.NoError(t, err)
	require.Equal(t, Location{}, loc)

	// The checkout is also found from the working directory upwards.
	t.Setenv(repo.Env, "")
	t.Chdir(filepath.Join(checkout, ".venv/lib"))
	loc, err = FindXLACPU("")
	require.NoError(t, err)
	require.Equal(t, newest, loc.Path)

	// An explicit variable wins; the kernel's name works too.
	t.Setenv(KernelCPUEnv, explicit)
	loc, err = FindXLACPU("")
	require.NoError(t, err)
	require.Equal(t, Location{Path: explicit, Source: "$" + KernelCPUEnv, Explicit: true}, loc)
	t.Setenv(XLACPUEnv, active)
	loc, err = FindXLACPU("")
	require.NoError(t, err)
	require.Equal(t, Location{Path: active, Source: "$" + XLACPUEnv, Explicit: true}, loc)

	// A variable naming a missing file is an error: no silent fallback.
	missing := filepath.Join(other, "gone", "pjrt_c_api_cpu_plugin.so")
	t.Setenv(XLACPUEnv, missing)
	_, err = FindXLACPU("")
	var ee *EnvError
	require.ErrorAs(t, err, &ee)
	require.True(t, errors.Is(err, os.ErrNotExist))
	require.Equal(t, "the XLA CPU plugin named by $CIFARLAB_XLA_CPU_PLUGIN="+missing+" does not exist", ee.Missing())
	require.Equal(t, "the XLA CPU plugin named by $CIFARLAB_XLA_CPU_PLUGIN="+missing+" does not exist (file does not exist): "+
		"set $CIFARLAB_XLA_CPU_PLUGIN to the absolute path of pjrt_c_api_cpu_plugin.so (pip install --no-deps "+
		"lammps-jax-pjrt-cpu==0.11.2 puts it in site-packages/lammps_jax_pjrt_cpu), or unset it", err.Error())
}

func TestPythonMinor(t *testing.T) {
	for path, want := range map[string]int{
		"/v/lib/python3.11/site-packages/x.so": 11, "/v/lib/python3.9/x": 9, "/v/lib/python3/x": -1,
		"/v/lib/python3.1x/x": -1, "/v/lib/x.so": -1} {
		require.Equal(t, want, pythonMinor(path), path)
	}
}

// TestFindXLACPUPluginGoXLAFolders checks that a "cpu" plugin in go-xla's folders wins over the
// checkout's venv. go-xla reads $PJRT_PLUGIN_LIBRARY_PATH once, at process start, so the search
// runs in a child process of this test binary; and go-xla dlopens what it finds, so the folder
// holds a link to the real plugin (the test needs it installed).
func TestFindXLACPUPluginGoXLAFolders(t *testing.T) {
	const childEnv = "CIFARLAB_TEST_CHILD"
	if os.Getenv(childEnv) == "goxla-folders" {
		loc, err := FindXLACPU("")
		fmt.Printf("\nRESULT %s|%s|%v\n", loc.Path, loc.Source, err)
		return
	}
	checkout := fakeCheckout(t)
	touch(t, filepath.Join(checkout, ".venv/lib/python3.11/site-packages/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so"))
	real := realXLACPUOrSkip(t)
	pluginDir := t.TempDir()
	plugin := filepath.Join(pluginDir, "pjrt_c_api_cpu_plugin.so")
	require.NoError(t, os.Symlink(real.Path, plugin))

	cmd := exec.Command(os.Args[0], "-test.run=^TestFindXLACPUPluginGoXLAFolders$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=goxla-folders", PJRTPathEnv+"="+pluginDir,
		repo.Env+"="+checkout, XLACPUEnv+"=", KernelCPUEnv+"=", "VIRTUAL_ENV=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	_, result, found := strings.Cut(string(out), "\nRESULT ")
	require.True(t, found, "child output: %s", out)
	result, _, _ = strings.Cut(result, "\n")
	require.Equal(t, plugin+"|go-xla's plugin folders|<nil>", result)
}

func TestNameOf(t *testing.T) {
	for path, want := range map[string]string{
		"/x/pjrt_c_api_cpu_plugin.so":                   "cpu",
		"/x/pjrt_c_api_cuda_plugin.so":                  "cuda",
		"/x/pjrt-plugin-cpu_v0.83.1.so":                 "cpu_v0.83.1",
		"/x/pjrt_plugin_tpu.so":                         "tpu",
		"/sp/jax_plugins/xla_cuda13/xla_cuda_plugin.so": "",
		"/x/libcublas.so.13":                            "",
	} {
		require.Equal(t, want, NameOf(path), path)
	}
}

func TestFindFilesFollowsGoXLAOrder(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	cpuA := touch(t, filepath.Join(a, "pjrt_c_api_cpu_plugin.so"))
	touch(t, filepath.Join(b, "pjrt_c_api_cpu_plugin.so"))
	cudaB := touch(t, filepath.Join(b, "pjrt_c_api_cuda_plugin.so"))
	touch(t, filepath.Join(b, "libsomething.so"))
	t.Setenv(PJRTPathEnv, a+"::"+b)
	require.Equal(t, []string{a, b}, Dirs())
	require.Equal(t, map[string]string{"cpu": cpuA, "cuda": cudaB}, FindFiles())

	t.Setenv(PJRTPathEnv, "")
	require.Empty(t, Dirs(), "an empty PJRT_PLUGIN_LIBRARY_PATH searches nothing, as in go-xla")
	require.Empty(t, FindFiles())
}

func TestDirsDefault(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("LD_LIBRARY_PATH", "relative/skipped:/opt/cuda/lib64")
	t.Setenv(PJRTPathEnv, "")
	os.Unsetenv(PJRTPathEnv)
	dirs := Dirs()
	require.GreaterOrEqual(t, len(dirs), 7)
	require.Equal(t, []string{
		filepath.Join(home, ".local/lib/go-xla"), filepath.Join(home, ".local/lib/go-xla/nvidia"),
		filepath.Join(home, ".local/lib/gomlx/pjrt"),
		"/usr/local/lib/go-xla", "/usr/local/lib/go-xla/nvidia", "/usr/local/lib/gomlx/pjrt",
		"/opt/cuda/lib64",
	}, dirs[:7])
}

func TestLdSoConfDirs(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "ld.so.conf")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "ld.so.conf.d"), 0o755))
	require.NoError(t, os.WriteFile(conf, []byte("# comment\ninclude ld.so.conf.d/*.conf\n/usr/lib/a\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ld.so.conf.d", "x.conf"), []byte("/opt/x/lib\n\n"), 0o644))
	require.Equal(t, []string{"/first", "/opt/x/lib", "/usr/lib/a"}, ldSoConfDirs([]string{"/first"}, conf, 0))
}
