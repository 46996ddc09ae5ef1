package plugins

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// jaxCUDAPlugin makes pip's jax-cudaN-pjrt layout with its version.py in a new site folder.
func jaxCUDAPlugin(t *testing.T, version string) string {
	plugin := touch(t, filepath.Join(t.TempDir(), "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so"))
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(plugin), "version.py"), []byte("_version = \""+version+"\"\n"), 0o644))
	return plugin
}

// withGPUInfo points the GPU models at files holding the given driver descriptions.
func withGPUInfo(t *testing.T, infos ...string) {
	dir := t.TempDir()
	for i, info := range infos {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, strconv.Itoa(i)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, strconv.Itoa(i), "information"), []byte(info), 0o644))
	}
	saved := nvidiaGPUInfo
	nvidiaGPUInfo = filepath.Join(dir, "*", "information")
	t.Cleanup(func() { nvidiaGPUInfo = saved })
}

func TestCUDACacheDirKeys(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	withGPUInfo(t, "Model: \t\t NVIDIA H200\nIRQ: 1\n", "Model: NVIDIA H200\n", "Model: NVIDIA A100-SXM4-80GB\n")
	dir, err := CUDACacheDir(jaxCUDAPlugin(t, "0.11.2"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(cache, "cifarlab", "xla-cuda", "jax-cuda13-pjrt-0.11.2", "nvidia-a100-sxm4-80gb+nvidia-h200"), dir)

	other, err := CUDACacheDir(jaxCUDAPlugin(t, "0.12.1"))
	require.NoError(t, err)
	require.Equal(t, "jax-cuda13-pjrt-0.12.1", filepath.Base(filepath.Dir(other)), "another plugin version, another folder")

	withGPUInfo(t)
	plain := touch(t, filepath.Join(t.TempDir(), "libpjrt_cuda.so"))
	dir, err = CUDACacheDir(plain)
	require.NoError(t, err)
	require.Equal(t, "unknown-gpu", filepath.Base(dir))
	key := filepath.Base(filepath.Dir(dir))
	require.Regexp(t, `^plugin-[0-9a-f]{16}$`, key, "a plugin without a version is keyed by its file")
	require.NoError(t, os.WriteFile(plain, []byte("a new build"), 0o644))
	again, err := CUDACacheDir(plain)
	require.NoError(t, err)
	require.NotEqual(t, dir, again, "a changed plugin file gets a new folder")
}

// TestSetCUDACompileCache: the folder is made 0700 (also when it existed with looser
// permissions), the flag comes after the user's $XLA_FLAGS, a cache the user set is theirs, and
// a second call (a second backend in the process) adds nothing.
func TestSetCUDACompileCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	withGPUInfo(t, "Model: NVIDIA H200\n")
	plugin := jaxCUDAPlugin(t, "0.11.2")
	want := filepath.Join(cache, "cifarlab", "xla-cuda", "jax-cuda13-pjrt-0.11.2", "nvidia-h200")
	require.NoError(t, os.MkdirAll(want, 0o755))
	t.Setenv("XLA_FLAGS", " --xla_gpu_cuda_data_dir=/x --xla_dump_to=/tmp/d ")

	dir, err := SetCUDACompileCache(plugin)
	require.NoError(t, err)
	require.Equal(t, want, dir)
	for _, d := range []string{dir, filepath.Join(dir, "autotune")} {
		fi, err := os.Stat(d)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), d)
	}
	flags := "--xla_gpu_cuda_data_dir=/x --xla_dump_to=/tmp/d " + FlagAutotuneCacheDir + "=" + filepath.Join(dir, "autotune")
	require.Equal(t, flags, os.Getenv("XLA_FLAGS"))

	_, err = SetCUDACompileCache(plugin)
	require.NoError(t, err)
	require.Equal(t, flags, os.Getenv("XLA_FLAGS"), "set once per process")

	t.Setenv("XLA_FLAGS", FlagAutotuneCacheDir+"=/mine --xla_dump_to=/tmp/d")
	_, err = SetCUDACompileCache(plugin)
	require.NoError(t, err)
	require.Equal(t, FlagAutotuneCacheDir+"=/mine --xla_dump_to=/tmp/d", os.Getenv("XLA_FLAGS"), "the user's own cache wins")

	require.NoError(t, os.Chmod(filepath.Join(cache, "cifarlab"), 0o500))
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(cache, "cifarlab"), 0o700) })
	if os.Getuid() != 0 { // root writes anywhere
		t.Setenv("XLA_FLAGS", "--xla_dump_to=/tmp/d")
		_, err = SetCUDACompileCache(jaxCUDAPlugin(t, "0.12.1"))
		require.ErrorContains(t, err, "plugins: CUDA compile cache: ")
		require.Equal(t, "--xla_dump_to=/tmp/d", os.Getenv("XLA_FLAGS"), "unchanged without a cache folder")
	}
}
