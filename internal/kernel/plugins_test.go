package kernel

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/internal/plugins"

	"github.com/stretchr/testify/require"
)

// touch creates an empty file (and its folders).
func touch(t *testing.T, path string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, nil, 0o755))
	return path
}

func TestSitePackagesOfRealPython(t *testing.T) {
	if !fileExists("/usr/bin/python3") {
		t.Skip("no /usr/bin/python3")
	}
	dirs := sitePackages(context.Background(), []string{"/usr/bin/python3", "/nonexistent/python"})
	require.NotEmpty(t, dirs)
	for _, d := range dirs {
		require.True(t, dirExists(d), d)
	}
}

func TestChooseCPUBackend(t *testing.T) {
	empty := t.TempDir()
	t.Setenv(pjrtPluginPathEnv, empty)
	t.Setenv(CPUPluginEnv, "")
	t.Setenv(plugins.XLACPUEnv, "")
	t.Setenv("VIRTUAL_ENV", "")
	repo := Repo{Dir: t.TempDir()} // no .venv

	b, err := chooseCPUBackend(repo, BackendOptions{})
	require.NoError(t, err)
	require.Equal(t, backend{GoMLX: "go", Reason: "pure-Go backend (no XLA CPU plugin found)"}, b)

	b, err = chooseCPUBackend(repo, BackendOptions{CPU: "xla:cpu"})
	require.NoError(t, err)
	require.Equal(t, backend{GoMLX: "xla:cpu", Reason: "set with --cpu-backend"}, b)

	// A file in the venv's place that is not a working plugin is not used: the kernel falls
	// back to the pure-Go backend and says why.
	venvPlugin := touch(t, filepath.Join(repo.Dir, ".venv/lib/python3.11/site-packages/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so"))
	b, err = chooseCPUBackend(repo, BackendOptions{})
	require.NoError(t, err)
	require.Equal(t, "go", b.GoMLX)
	require.Contains(t, b.Reason, "pure-Go backend (the XLA CPU plugin "+venvPlugin+" in the venv "+
		filepath.Join(repo.Dir, ".venv")+" does not start: ")

	// pip's lammps-jax-pjrt-cpu in the repository's venv, a real one: what backends.New("cpu") loads.
	if real, err := plugins.FindXLACPU(""); err == nil && real.Path != "" {
		require.NoError(t, os.Remove(venvPlugin))
		require.NoError(t, os.Symlink(real.Path, venvPlugin))
		b, err = chooseCPUBackend(repo, BackendOptions{})
		require.NoError(t, err)
		require.Equal(t, backend{GoMLX: "xla:cpu", Env: map[string]string{pjrtPluginPathEnv: filepath.Dir(venvPlugin)},
			Reason: "XLA CPU plugin found in the venv " + filepath.Join(repo.Dir, ".venv") + ": " + venvPlugin}, b)
	} else {
		t.Log("no XLA CPU plugin installed: the positive case is not checked")
	}

	// (go-xla's own plugin folders, searched before the venv, are read from
	// $PJRT_PLUGIN_LIBRARY_PATH once at process start, so they are tested in
	// TestFindXLACPUPluginGoXLAFolders in internal/plugins, not here.)

	// A plugin named by the variable must start: no silent fallback from an explicit choice.
	odd := touch(t, filepath.Join(t.TempDir(), "libxla_cpu.so"))
	t.Setenv(CPUPluginEnv, odd)
	_, err = chooseCPUBackend(repo, BackendOptions{})
	require.ErrorContains(t, err, "the XLA CPU plugin named by $"+CPUPluginEnv+" does not start: ")

	t.Setenv(CPUPluginEnv, "/nonexistent/pjrt_c_api_cpu_plugin.so")
	_, err = chooseCPUBackend(repo, BackendOptions{})
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "$CIFARLAB_CPU_PLUGIN=/nonexistent/pjrt_c_api_cpu_plugin.so does not exist")

	_, err = chooseCPUBackend(repo, BackendOptions{CPUPlugin: "/nonexistent/pjrt_c_api_cpu_plugin.so"})
	require.EqualError(t, err, "PJRT plugin /nonexistent/pjrt_c_api_cpu_plugin.so does not exist")
}

func TestChooseCUDABackend(t *testing.T) {
	t.Setenv(pjrtPluginPathEnv, t.TempDir())
	site := t.TempDir()
	jax := touch(t, filepath.Join(site, "jax_plugins/xla_cuda13/xla_cuda_plugin.so"))
	touch(t, filepath.Join(site, "nvidia/cu13/bin/ptxas"))
	t.Setenv(CUDAPluginEnv, jax)
	b, err := chooseCUDABackend(context.Background(), Repo{}, "/links", BackendOptions{})
	require.NoError(t, err)
	require.Equal(t, backend{
		GoMLX: "xla:cuda",
		Env: map[string]string{
			pjrtPluginPathEnv: "/links/jax_plugins/xla_cuda13",
			"XLA_FLAGS":       "--xla_gpu_cuda_data_dir=" + filepath.Join(site, "nvidia/cu13"),
		},
		Reason: "CUDA plugin given: " + jax,
		Links: []link{
			{Path: "/links/jax_plugins/xla_cuda13/pjrt_c_api_cuda_plugin.so", Target: jax},
			{Path: "/links/nvidia", Target: filepath.Join(site, "nvidia")},
		},
	}, b, "go-xla finds plugins only by the pjrt_c_api_NAME_plugin.so name: the jax file gets a link next to a link to pip's nvidia/")

	b, err = chooseCUDABackend(context.Background(), Repo{}, "/links", BackendOptions{CUDA: "xla:cuda,memory_fraction=0.5"})
	require.NoError(t, err)
	require.Equal(t, "xla:cuda,memory_fraction=0.5", b.GoMLX)

	goxla := t.TempDir()
	p := touch(t, filepath.Join(goxla, "nvidia", "pjrt_c_api_cuda_plugin.so"))
	t.Setenv(CUDAPluginEnv, "")
	t.Setenv(pjrtPluginPathEnv, filepath.Join(goxla, "nvidia"))
	b, err = chooseCUDABackend(context.Background(), Repo{}, "/links", BackendOptions{})
	require.NoError(t, err)
	require.Equal(t, backend{GoMLX: "xla:cuda", Env: map[string]string{pjrtPluginPathEnv: filepath.Join(goxla, "nvidia")},
		Reason: "go-xla CUDA plugin found: " + p}, b)
}

// TestFindCUDAPluginScript runs kernel/find_cuda_plugin.py (used by kernel/gpu-smoke.sh and
// bench/gpu.sh on the GPU machine) with real Python on fake site-packages folders.
func TestFindCUDAPluginScript(t *testing.T) {
	repo := testRepo(t)
	script := filepath.Join(repo.Dir, "kernel", "find_cuda_plugin.py")
	run := func(pythonPath string) (string, error) {
		cmd := exec.Command("/usr/bin/python3", "-S", script)
		cmd.Env = []string{"PYTHONPATH=" + pythonPath, "PATH=/usr/bin:/bin"}
		out, err := cmd.Output()
		return string(out), err
	}
	site := t.TempDir()
	cuda12 := touch(t, filepath.Join(site, "jax_plugins/xla_cuda12/xla_cuda_plugin.so"))
	out, err := run(site)
	require.NoError(t, err)
	require.Equal(t, cuda12+"\n", out)

	// A package with __init__.py is found through the import system; cuda13 wins over cuda12.
	cuda13 := touch(t, filepath.Join(site, "jax_plugins/xla_cuda13/xla_cuda_plugin.so"))
	touch(t, filepath.Join(site, "jax_plugins/xla_cuda13/__init__.py"))
	out, err = run(site)
	require.NoError(t, err)
	require.Equal(t, cuda13+"\n", out)

	out, err = run(t.TempDir())
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	require.Equal(t, 1, exitErr.ExitCode())
	require.Empty(t, out)
}
