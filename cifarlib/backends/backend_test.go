package backends

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/cifarlab/cifarlab/internal/repo"
	"github.com/stretchr/testify/require"
)

func TestNewBackendGo(t *testing.T) {
	b, err := New("go")
	require.NoError(t, err)
	require.Equal(t, "go (pure Go, CPU)", Name(b))
	require.Equal(t, "<no backend>", Name(nil))
}

func TestNewBackendCPU(t *testing.T) {
	b, err := New("cpu")
	require.NoError(t, err)
	loc, err := plugins.FindXLACPU("")
	require.NoError(t, err)
	if loc.Path == "" {
		require.Equal(t, "go (pure Go, CPU)", Name(b), "without the XLA CPU plugin, cpu is the Go backend")
		require.Equal(t, "", Plugin(b))
		return
	}
	require.Equal(t, "xla:cpu (XLA CPU plugin)", Name(b))
	require.Equal(t, loc.Path, Plugin(b))
}

// TestNewBackendCPUFindsVenvPlugin: with the plugin pip-installed in the repository's .venv and
// no environment variable, "cpu" and "xla:cpu" load it by absolute path, and "go" stays pure Go.
func TestNewBackendCPUFindsVenvPlugin(t *testing.T) {
	loc := testenv.XLACPUPluginOrSkip(t)
	t.Setenv(plugins.XLACPUEnv, "")
	t.Setenv(plugins.KernelCPUEnv, "")
	if !loc.Explicit && plugins.GoXLAName("cpu") == "" {
		require.Equal(t, "the venv "+filepath.Join(repo.Dir(), ".venv"), loc.Source)
		require.True(t, strings.HasSuffix(loc.Path, "/site-packages/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so"), loc.Path)
	}
	for _, name := range []string{"cpu", "CPU", "xla:cpu", "xla"} {
		b, err := New(name)
		require.NoError(t, err, name)
		require.Equal(t, "xla:cpu (XLA CPU plugin)", Name(b), name)
		require.True(t, filepath.IsAbs(Plugin(b)), "loaded by absolute path: %q", Plugin(b))
	}
	b, err := New("go")
	require.NoError(t, err)
	require.Equal(t, "go (pure Go, CPU)", Name(b))
	require.Equal(t, "", Plugin(b))
}

// TestNewBackendCPUPluginEnv: a variable naming a missing plugin file is an error for "cpu" too (no
// silent fallback), and an explicit file that is not a plugin fails with the loader's error.
// (The search order itself is internal/plugins' TestFindXLACPUPluginSearch.)
func TestNewBackendCPUPluginEnv(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone", "pjrt_c_api_cpu_plugin.so")
	t.Setenv(plugins.XLACPUEnv, missing)
	_, err := New("cpu")
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.True(t, errors.Is(err, ErrBackend))
	require.Equal(t, `backend "cpu" unavailable: the XLA CPU plugin named by $CIFARLAB_XLA_CPU_PLUGIN=`+missing+
		` does not exist (file does not exist): set $CIFARLAB_XLA_CPU_PLUGIN to the absolute path of `+
		`pjrt_c_api_cpu_plugin.so (pip install --no-deps lammps-jax-pjrt-cpu==0.11.2 puts it in `+
		`site-packages/lammps_jax_pjrt_cpu), or unset it`, err.Error())
	_, err = New("xla:cpu")
	require.ErrorAs(t, err, &be)
	require.Equal(t, "xla:cpu", be.Requested)

	explicit := filepath.Join(t.TempDir(), "my plugin.so")
	require.NoError(t, os.WriteFile(explicit, []byte("not a real plugin"), 0o644))
	t.Setenv(plugins.XLACPUEnv, explicit)
	_, err = New("cpu")
	require.ErrorAs(t, err, &be)
	require.Equal(t, "XLA could not start plugin "+explicit, be.Missing)
}

func TestNewBackendAuto(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	b, err := New("auto")
	require.NoError(t, err)
	require.Equal(t, "go (pure Go, CPU)", Name(b))

	t.Setenv("GOMLX_BACKEND", "")
	b, err = New("")
	require.NoError(t, err)
	if !plugins.HasNvidiaGPU() || plugins.GoXLAName("cuda") == "" {
		want := "go (pure Go, CPU)"
		if loc, _ := plugins.FindXLACPU(""); loc.Path != "" {
			want = "xla:cpu (XLA CPU plugin)"
		}
		require.Equal(t, want, Name(b))
	}

	t.Setenv("GOMLX_BACKEND", "tpu")
	_, err = New("auto")
	require.EqualError(t, err, `backends: $GOMLX_BACKEND="tpu": backend "tpu" unavailable: unknown backend name: `+
		`use one of "auto", "cpu", "go", "cuda" (or a GoMLX configuration such as "xla:cpu")`)
}

func TestNewBackendCUDAWithoutPlugin(t *testing.T) {
	if plugins.GoXLAName("cuda") != "" {
		t.Skip("the CUDA PJRT plugin is installed here")
	}
	t.Setenv(plugins.CUDAEnv, "")
	withGPU(t, true)
	_, err := New("cuda")
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.Contains(t, be.Missing, "the CUDA PJRT plugin is not installed (plugins found: ")
	require.Equal(t, plugins.CUDAInstallHint, be.Fix)
	require.Contains(t, err.Error(), "go run github.com/gomlx/go-xla/cmd/pjrt_installer@latest -plugin=cuda13")
}

func TestNewBackendNeverDownloads(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	_, err := New("xla:cpu")
	if loc, _ := plugins.FindXLACPU(""); loc.Path == "" {
		require.EqualError(t, err, `backend "xla:cpu" unavailable: the XLA CPU PJRT plugin is not installed: `+plugins.XLACPUInstallHint)
	} else {
		require.NoError(t, err)
	}
	_, err = New("xla:tpu")
	require.EqualError(t, err, `backend "xla:tpu" unavailable: the XLA PJRT plugin "tpu" is not installed `+
		`(found: `+plugins.DescribeGoXLA()+`): install it with `+"`go run github.com/gomlx/go-xla/cmd/pjrt_installer@latest`"+
		`, set PJRT_PLUGIN_LIBRARY_PATH to its folder, or use the go backend`)
	_, statErr := os.Stat(filepath.Join(home, ".local", "lib", "go-xla"))
	require.True(t, os.IsNotExist(statErr), "NewBackend must not install plugins")
}

func TestNewBackendCUDAPluginEnv(t *testing.T) {
	withGPU(t, true)
	missing := filepath.Join(t.TempDir(), "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so")
	t.Setenv(plugins.CUDAEnv, missing)
	_, err := New("cuda")
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.Equal(t, `backend "cuda" unavailable: the CUDA PJRT plugin named by $CIFARLAB_CUDA_PLUGIN=`+missing+
		` does not exist (file does not exist): set $CIFARLAB_CUDA_PLUGIN to the absolute path of the plugin `+
		`(e.g. SITE/jax_plugins/xla_cuda13/xla_cuda_plugin.so of pip's jax-cuda13-pjrt), or unset it`, err.Error())
	t.Setenv(plugins.CUDAEnv, "")
	t.Setenv("GOMLX_BACKEND", "")
	_, err = New("xla:" + missing)
	require.ErrorAs(t, err, &be)
	require.Equal(t, "the CUDA PJRT plugin "+missing+" does not exist", be.Missing)
}

func TestNewBackendUnknown(t *testing.T) {
	_, err := New("tpu")
	require.EqualError(t, err, `backend "tpu" unavailable: unknown backend name: use one of "auto", "cpu", "go", "cuda" `+
		`(or a GoMLX configuration such as "xla:cpu")`)
	_, err = New("go:bogus_option")
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.Equal(t, "the Go backend rejected its configuration", be.Missing)
}
