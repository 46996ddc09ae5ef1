package plugins

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeNvidiaSite lays out SITE as pip does for jax-cuda13-pjrt and the wheels of
// kernel/requirements-cuda-libs.txt: the plugin (a stand-in file: no ELF, so the jax layout's
// RPATH applies), SITE/nvidia/{cu13,cudnn,nccl}/lib with every library, cu13/bin/ptxas,
// cu13/nvvm/libdevice, and a dist-info per package at the pinned version.
func fakeNvidiaSite(t *testing.T) (site, plugin string) {
	t.Helper()
	site = t.TempDir()
	plugin = fakeJaxCUDA(t, site, "0.11.2")
	dirs := map[string]string{"libcudnn.so.9": "cudnn/lib", "libnccl.so.2": "nccl/lib"}
	for _, lib := range CUDALibs {
		dir := "cu13"
		if !lib.Tool {
			dir = "cu13/lib"
			if d, ok := dirs[lib.File]; ok {
				dir = d
			}
		}
		touch(t, filepath.Join(site, "nvidia", dir, lib.File))
	}
	for pkg, v := range pinnedVersions(t) {
		writeDistInfo(t, site, pkg, v)
	}
	return site, plugin
}

// pinnedVersions reads the package versions of kernel/requirements-cuda-libs.txt.
func pinnedVersions(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "kernel", "requirements-cuda-libs.txt"))
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if pkg, rest, ok := strings.Cut(sc.Text(), "=="); ok && !strings.HasPrefix(pkg, "#") {
			out[pkg] = strings.Fields(rest)[0]
		}
	}
	return out
}

func writeDistInfo(t *testing.T, site, pkg, version string) {
	t.Helper()
	dir := filepath.Join(site, strings.ReplaceAll(pkg, "-", "_")+"-"+version+".dist-info")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "METADATA"),
		[]byte("Metadata-Version: 2.1\nName: "+pkg+"\nVersion: "+version+"\n\nlong description\n"), 0o644))
}

// TestPinnedCUDALibsAccepted: the versions kernel/requirements-cuda-libs.txt pins are the ones
// the plugin accepts, and every library's package is pinned.
func TestPinnedCUDALibsAccepted(t *testing.T) {
	pins := pinnedVersions(t)
	for _, lib := range CUDALibs {
		v, ok := pins[lib.Package]
		require.True(t, ok, "%s is pinned", lib.Package)
		require.True(t, lib.accepts(v), "%s %s within %s", lib.Package, v, lib.versionRange())
	}
	require.Len(t, pins, 14, "the 13 packages of jax-cuda13-plugin[with-cuda] and nvidia-cuda-crt (nvidia-cuda-nvcc's)")
}

// TestCheckCUDALibs: the present, missing, other-major and wrong-version cases on a fake tree
// of pip's layout.
func TestCheckCUDALibs(t *testing.T) {
	t.Setenv("XLA_FLAGS", "")
	t.Setenv("LD_LIBRARY_PATH", "")
	site, plugin := fakeNvidiaSite(t)
	for _, s := range CheckCUDALibs(plugin) {
		require.True(t, s.OK(), "%s: %s", s.Lib.Name, s)
	}
	got := CheckCUDALibs(plugin)
	require.Len(t, got, len(CUDALibs))
	cudnn := got[3]
	require.Equal(t, "cuDNN", cudnn.Lib.Name)
	require.Equal(t, filepath.Join(site, "nvidia", "cudnn", "lib", "libcudnn.so.9")+" (nvidia-cudnn-cu13 9.13.0.50)", cudnn.String())
	require.Equal(t, filepath.Join(site, "nvidia", "cu13", "bin", "ptxas")+" (nvidia-cuda-nvcc 13.0.88)", got[9].String())

	for _, c := range []struct {
		name    string
		setup   func()
		lib     int
		problem string
	}{
		{"missing cuBLAS", func() { require.NoError(t, os.Remove(filepath.Join(site, "nvidia", "cu13", "lib", "libcublas.so.13"))) },
			1, "libcublas.so.13 not found (looked in " + filepath.Join(site, "nvidia", "cu13", "lib") + ", " +
				filepath.Join(site, "nvidia", "cudnn", "lib") + ", " + filepath.Join(site, "nvidia", "nccl", "lib") +
				"): install nvidia-cublas >=13.0.0.19"},
		{"cuDNN 8 instead of 9", func() {
			lib := filepath.Join(site, "nvidia", "cudnn", "lib")
			require.NoError(t, os.Rename(filepath.Join(lib, "libcudnn.so.9"), filepath.Join(lib, "libcudnn.so.8")))
		}, 3, "libcudnn.so.9 not found (looked in " + filepath.Join(site, "nvidia", "cu13", "lib") + ", " +
			filepath.Join(site, "nvidia", "cudnn", "lib") + ", " + filepath.Join(site, "nvidia", "nccl", "lib") + "); found " +
			filepath.Join(site, "nvidia", "cudnn", "lib", "libcudnn.so.8") + ", another major version the plugin does not load: " +
			"install nvidia-cudnn-cu13 >=9.12.0.46,<10"},
		{"old NCCL", func() {
			require.NoError(t, os.RemoveAll(filepath.Join(site, "nvidia_nccl_cu13-2.27.7.dist-info")))
			writeDistInfo(t, site, "nvidia-nccl-cu13", "2.26.2")
		}, 7, "version 2.26.2, the plugin needs nvidia-nccl-cu13 >=2.27.7"},
		{"no ptxas", func() { require.NoError(t, os.Remove(filepath.Join(site, "nvidia", "cu13", "bin", "ptxas"))) },
			9, "bin/ptxas not found (looked in " + filepath.Join(site, "nvidia", "cu13") + "): install nvidia-cuda-nvcc >=13.0.48"},
	} {
		c.setup()
		s := CheckCUDALibs(plugin)[c.lib]
		require.False(t, s.OK(), c.name)
		require.Equal(t, c.problem, s.Problem, c.name)
	}

	// XLA_FLAGS names the data dir; $LD_LIBRARY_PATH is searched after the RPATH.
	other := t.TempDir()
	touch(t, filepath.Join(other, "bin", "ptxas"))
	t.Setenv("XLA_FLAGS", "--xla_gpu_cuda_data_dir="+other)
	require.Equal(t, filepath.Join(other, "bin", "ptxas"), CheckCUDALibs(plugin)[9].Path)
	sys := t.TempDir()
	real := touch(t, filepath.Join(sys, "libcublas.so.13.1.0.3"))
	require.NoError(t, os.Symlink(real, filepath.Join(sys, "libcublas.so.13")))
	t.Setenv("LD_LIBRARY_PATH", "relative:"+sys)
	s := CheckCUDALibs(plugin)[1]
	require.Equal(t, filepath.Join(sys, "libcublas.so.13")+" (nvidia-cublas 13.1.0.3)", s.String(), "version from the file name")
	require.Equal(t, sys, CUDALibDirs(plugin)[len(CUDALibDirs(plugin))-1])
}

// TestCUDALibDirsRealPlugin reads the RPATH of PyPI's jax-cuda13-pjrt plugin (kernel/setup.sh
// puts it in .venv): the folders doctor searches are the ones the dynamic loader would.
func TestCUDALibDirsRealPlugin(t *testing.T) {
	sites, _ := filepath.Glob(filepath.Join("..", "..", ".venv", "lib", "python3*", "site-packages"))
	found := FindJaxCUDA(sites)
	if len(found) == 0 {
		t.Skip("PyPI's jax-cuda13-pjrt is not installed in .venv (bash kernel/setup.sh installs it)")
	}
	require.Equal(t, jaxCUDA13RPATH, dedupe(readRPATH(found[0])), "the RPATH of jax-cuda13-pjrt 0.11.2")
	t.Setenv("LD_LIBRARY_PATH", "")
	site, err := filepath.Abs(filepath.Dir(filepath.Dir(filepath.Dir(found[0]))))
	require.NoError(t, err)
	site, err = filepath.EvalSymlinks(site)
	require.NoError(t, err)
	var want []string
	for _, sub := range []string{"nvidia/cu13/lib", "nvidia/cudnn/lib", "tensorrt", "nvidia/nccl/lib"} {
		want = append(want, filepath.Join(site, sub), filepath.Join(site, "jax_plugins", sub)) // $ORIGIN/../../X, $ORIGIN/../X
	}
	require.Equal(t, want,
		CUDALibDirs(found[0]))
}

func dedupe(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// TestCheckCUDALibsRealWheels installs two of the pinned wheels from PyPI (the CUDA runtime and
// nvJitLink, 42 MB, hash-checked by pip) into a scratch site-packages next to a link to the real
// plugin, and checks that doctor's search finds them with their versions, and the others missing.
func TestCheckCUDALibsRealWheels(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads 42 MB from PyPI (pip's cache keeps them)")
	}
	py := filepath.Join("..", "..", ".venv", "bin", "python")
	sites, _ := filepath.Glob(filepath.Join("..", "..", ".venv", "lib", "python3*", "site-packages"))
	found := FindJaxCUDA(sites)
	if _, err := os.Stat(py); err != nil || len(found) == 0 {
		t.Skip("no .venv with jax-cuda13-pjrt (bash kernel/setup.sh)")
	}
	var reqs []string
	f, err := os.ReadFile(filepath.Join("..", "..", "kernel", "requirements-cuda-libs.txt"))
	require.NoError(t, err)
	for _, block := range strings.Split(string(f), "\n\n") {
		lines := strings.Split(block, "\n")
		last := strings.Join(lines[1:], "\n")
		if strings.HasPrefix(last, "nvidia-cuda-runtime==") || strings.HasPrefix(last, "nvidia-nvjitlink==") {
			reqs = append(reqs, last)
		}
	}
	require.Len(t, reqs, 2)
	reqFile := filepath.Join(t.TempDir(), "req.txt")
	require.NoError(t, os.WriteFile(reqFile, []byte(strings.Join(reqs, "\n")+"\n"), 0o644))
	site := t.TempDir()
	out, err := exec.Command(py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--require-hashes",
		"--only-binary=:all:", "--target", site, "-r", reqFile).CombinedOutput()
	require.NoError(t, err, string(out))
	real, err := filepath.EvalSymlinks(found[0])
	require.NoError(t, err)
	link := filepath.Join(site, "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so")
	require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
	require.NoError(t, os.Symlink(real, link))

	// The link resolves to .venv's plugin, whose RPATH folders hold no NVIDIA libraries without
	// a GPU; $LD_LIBRARY_PATH names the scratch ones, as a user's would.
	t.Setenv("XLA_FLAGS", "")
	t.Setenv("LD_LIBRARY_PATH", filepath.Join(site, "nvidia", "cu13", "lib"))
	byName := map[string]CUDALibStatus{}
	for _, s := range CheckCUDALibs(link) {
		byName[s.Lib.Name] = s
	}
	require.Equal(t, filepath.Join(site, "nvidia", "cu13", "lib", "libcudart.so.13")+" (nvidia-cuda-runtime 13.0.96)", byName["CUDA runtime"].String())
	require.Equal(t, filepath.Join(site, "nvidia", "cu13", "lib", "libnvJitLink.so.13")+" (nvidia-nvjitlink 13.0.88)", byName["nvJitLink"].String())
	if !isDir(filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(real))), "nvidia")) {
		require.False(t, byName["cuDNN"].OK())
		require.Contains(t, byName["cuDNN"].Problem, "libcudnn.so.9 not found")
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"9.13.0.50", "10", -1}, {"10.0", "10", 0}, {"13.0.96", "13.0.48", 1}, {"2.27.7", "2.27.7", 0}, {"2.3", "2.27", -1}} {
		require.Equal(t, c.want, compareVersions(c.a, c.b), "%s vs %s", c.a, c.b)
	}
}

// TestCUDASitePlugin: $CIFARLAB_CUDA_SITE names the site-packages whose plugin FindCUDA and
// FindCUDAFile return; a folder without one is an *EnvError.
func TestCUDASitePlugin(t *testing.T) {
	site, plugin := fakeNvidiaSite(t)
	t.Setenv(CUDAEnv, "")
	t.Setenv(CUDASiteEnv, "")
	p, err := CUDASitePlugin()
	require.NoError(t, err)
	require.Equal(t, "", p)

	t.Setenv(CUDASiteEnv, site)
	p, err = CUDASitePlugin()
	require.NoError(t, err)
	require.Equal(t, plugin, p)
	p, err = FindCUDA()
	require.NoError(t, err)
	require.Equal(t, plugin, p)
	f, err := FindCUDAFile(t.TempDir())
	require.NoError(t, err)
	require.Equal(t, CUDAFile{Path: plugin, Package: "jax-cuda13-pjrt 0.11.2", Source: "$" + CUDASiteEnv + "=" + site}, f)

	empty := t.TempDir()
	t.Setenv(CUDASiteEnv, empty)
	_, err = FindCUDA()
	var ee *EnvError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, "the CUDA PJRT plugin (jax_plugins/xla_cuda*/xla_cuda_plugin.so) in the folder named by $CIFARLAB_CUDA_SITE="+
		empty+" does not exist (no jax_plugins/xla_cuda*/xla_cuda_plugin.so): set $CIFARLAB_CUDA_SITE to the site-packages "+
		"folder of a Python that has jax-cuda13-pjrt (python3 -c 'import site; print(site.getsitepackages())'), or unset it", err.Error())
	t.Setenv(CUDASiteEnv, filepath.Join(empty, "gone"))
	_, err = FindCUDAFile("")
	require.ErrorAs(t, err, &ee)

	t.Setenv(CUDASiteEnv, site)
	explicit := touch(t, filepath.Join(t.TempDir(), "pjrt_c_api_cuda_plugin.so"))
	t.Setenv(CUDAEnv, explicit)
	p, err = FindCUDA()
	require.NoError(t, err)
	require.Equal(t, explicit, p, "$CIFARLAB_CUDA_PLUGIN wins")
}

func TestParseGPUMemory(t *testing.T) {
	b, err := parseGPUMemory("143771\n81559\n")
	require.NoError(t, err)
	require.Equal(t, int64(81559)<<20, b)
	_, err = parseGPUMemory("")
	require.Error(t, err)
	_, err = parseGPUMemory("[N/A]\n")
	require.Error(t, err)
}
