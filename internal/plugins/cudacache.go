package plugins

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// FlagAutotuneCacheDir is XLA's per-fusion autotune cache (SetCUDACompileCache): one file per
// autotuned fusion (GEMM and convolution algorithms, Triton tilings), written to a temporary
// file and renamed, so processes can share the folder. JAX turns it on with its persistent
// compilation cache.
//
// XLA's other cross-process cache, the kernel cache (--xla_gpu_kernel_cache_file, present in
// jax-cuda13-pjrt 0.11.2), is not set: XLA uses it only with
// xla_gpu_enable_llvm_module_compilation_parallelism, which defaults to false and which that
// XLA no longer accepts in $XLA_FLAGS ("Unknown flag", TestCUDACompileCacheReachesXLA's made-up
// flag shows the same abort); JAX sets both in the compile options' DebugOptions, which go-xla
// (v0.4.5 to v0.4.13) only takes whole ($XLA_DEBUG_OPTIONS), replacing every default of XLA's flags.
const FlagAutotuneCacheDir = "--xla_gpu_per_fusion_autotune_cache_dir"

// nvidiaGPUInfo is where the NVIDIA driver describes each GPU ("Model: NVIDIA H200"); tests
// replace it.
var nvidiaGPUInfo = "/proc/driver/nvidia/gpus/*/information"

// CUDACacheDir returns the folder of the CUDA compile cache for plugin (a CUDA PJRT plugin file)
// on this machine's GPUs: os.UserCacheDir()/cifarlab/xla-cuda/PLUGIN/GPU (e.g.
// ~/.cache/cifarlab/xla-cuda/jax-cuda13-pjrt-0.11.2/nvidia-h200), keyed by the plugin's version
// (jax-cudaN-pjrt's, else a digest of the file's path, size and time) and by the GPU models
// the driver lists, because compiled kernels and autotuning results hold for one XLA and one GPU.
func CUDACacheDir(plugin string) (string, error) {
	root, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("plugins: CUDA compile cache: %w (set $XDG_CACHE_HOME or $HOME)", err)
	}
	return filepath.Join(root, "cifarlab", "xla-cuda", cudaPluginKey(plugin), gpuKey()), nil
}

var unsafeKey = regexp.MustCompile(`[^a-z0-9._-]+`)

// cudaPluginKey is the plugin part of the cache folder: "jax-cuda13-pjrt-0.11.2", or for a
// plugin of unknown version "plugin-" and a digest of its path, size and modification time.
func cudaPluginKey(plugin string) string {
	if pkg := JaxCUDAPackage(plugin); strings.Contains(pkg, " ") {
		return unsafeKey.ReplaceAllString(strings.ToLower(pkg), "-")
	}
	h := sha256.New()
	if real, err := filepath.EvalSymlinks(plugin); err == nil {
		plugin = real
	}
	fmt.Fprint(h, plugin)
	if fi, err := os.Stat(plugin); err == nil {
		fmt.Fprint(h, "\x00", fi.Size(), "\x00", fi.ModTime().UnixNano())
	}
	return "plugin-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// gpuKey is the GPU part of the cache folder: the sorted, distinct models of nvidiaGPUInfo,
// e.g. "nvidia-h200", or "unknown-gpu".
func gpuKey() string {
	seen := map[string]bool{}
	for _, model := range GPUModels() {
		if k := strings.Trim(unsafeKey.ReplaceAllString(strings.ToLower(model), "-"), "-"); k != "" {
			seen[k] = true
		}
	}
	if len(seen) == 0 {
		return "unknown-gpu"
	}
	models := make([]string, 0, len(seen))
	for m := range seen {
		models = append(models, m)
	}
	sort.Strings(models)
	return strings.Join(models, "+")
}

// GPUModels returns the model of each NVIDIA GPU the driver lists ("NVIDIA H200"), in the
// driver's order; none without a GPU.
func GPUModels() []string {
	files, _ := filepath.Glob(nvidiaGPUInfo)
	var models []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if model, ok := strings.CutPrefix(strings.TrimSpace(line), "Model:"); ok && strings.TrimSpace(model) != "" {
				models = append(models, strings.TrimSpace(model))
			}
		}
	}
	return models
}

// SetCUDACompileCache keeps what XLA can keep of a CUDA compile across processes, for plugin (the
// CUDA PJRT plugin file about to be loaded): it creates CUDACacheDir and its autotune folder
// (mode 0700) and appends FlagAutotuneCacheDir=DIR/autotune to $XLA_FLAGS, after the user's own
// flags, unless $XLA_FLAGS sets it already. It must run before the plugin creates its client:
// XLA reads $XLA_FLAGS once, then. It returns the folder; on an error (no cache folder can be
// made) $XLA_FLAGS is left as it was, and autotuning is simply not kept.
func SetCUDACompileCache(plugin string) (string, error) {
	dir, err := CUDACacheDir(plugin)
	if err != nil {
		return "", err
	}
	autotune := filepath.Join(dir, "autotune")
	for _, d := range []string{dir, autotune} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", fmt.Errorf("plugins: CUDA compile cache: %w", err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return "", fmt.Errorf("plugins: CUDA compile cache: %w", err)
		}
	}
	flags := strings.TrimSpace(os.Getenv("XLA_FLAGS"))
	if hasXLAFlag(flags, FlagAutotuneCacheDir) {
		return dir, nil
	}
	if err := os.Setenv("XLA_FLAGS", strings.TrimSpace(flags+" "+FlagAutotuneCacheDir+"="+autotune)); err != nil {
		return "", fmt.Errorf("plugins: CUDA compile cache: setting $XLA_FLAGS: %w", err)
	}
	return dir, nil
}

// hasXLAFlag reports whether flags (an $XLA_FLAGS value) sets flag ("--name").
func hasXLAFlag(flags, flag string) bool {
	for _, f := range strings.Fields(flags) {
		if f == flag || strings.HasPrefix(f, flag+"=") {
			return true
		}
	}
	return false
}
