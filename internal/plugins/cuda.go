package plugins

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// JaxCUDAFile is where pip's jax-cuda13-pjrt (and jax-cuda12-pjrt) put the CUDA PJRT plugin,
// relative to site-packages: jax_plugins/xla_cuda13/xla_cuda_plugin.so.
const JaxCUDAFile = "jax_plugins/xla_cuda*/xla_cuda_plugin.so"

// FindCUDA returns the CUDA plugin backends.New("cuda") loads: the absolute path in
// $CIFARLAB_CUDA_PLUGIN, else the plugin in $CIFARLAB_CUDA_SITE, else the name of a "cuda"
// plugin go-xla finds; "" when there is none. A set variable naming a missing file or folder
// gives an *EnvError.
func FindCUDA() (string, error) {
	abs, err := envFile(CUDAEnv, "CUDA PJRT plugin", "set $"+CUDAEnv+" to the absolute path of the plugin "+
		"(e.g. SITE/jax_plugins/xla_cuda13/xla_cuda_plugin.so of pip's jax-cuda13-pjrt), or unset it")
	if err != nil || abs != "" {
		return abs, err
	}
	if abs, err := CUDASitePlugin(); err != nil || abs != "" {
		return abs, err
	}
	return GoXLAName("cuda"), nil
}

// FindJaxCUDA returns the xla_cuda_plugin.so files of pip-installed jax-cuda1x-pjrt packages in
// the given site-packages folders, newest CUDA first.
func FindJaxCUDA(siteDirs []string) []string {
	var out []string
	for _, d := range siteDirs {
		matches, _ := filepath.Glob(filepath.Join(d, JaxCUDAFile))
		sort.Sort(sort.Reverse(sort.StringSlice(matches)))
		out = append(out, matches...)
	}
	return out
}

// JaxCUDADataDir returns SITE/nvidia/cuN for the plugin of jax-cudaN-pjrt,
// SITE/jax_plugins/xla_cudaN/<plugin>.so, when that folder has bin/ptxas or nvvm/libdevice
// (pip's nvidia-* packages); else "".
func JaxCUDADataDir(plugin string) string {
	pluginDir := filepath.Dir(plugin)
	version, ok := strings.CutPrefix(filepath.Base(pluginDir), "xla_cuda")
	if !ok || version == "" || filepath.Base(filepath.Dir(pluginDir)) != "jax_plugins" {
		return ""
	}
	dir := filepath.Join(filepath.Dir(filepath.Dir(pluginDir)), "nvidia", "cu"+version)
	if isFile(filepath.Join(dir, "bin", "ptxas")) || isDir(filepath.Join(dir, "nvvm", "libdevice")) {
		return dir
	}
	return ""
}

// SetJaxCUDADataDir points XLA at pip's CUDA tools (ptxas, libdevice) for the plugin of
// jax-cudaN-pjrt (see JaxCUDADataDir): it adds --xla_gpu_cuda_data_dir to $XLA_FLAGS unless
// already set there, as go-xla does for its own plugin layout.
func SetJaxCUDADataDir(plugin string) {
	dir := JaxCUDADataDir(plugin)
	if dir == "" || strings.Contains(os.Getenv("XLA_FLAGS"), "--xla_gpu_cuda_data_dir") {
		return
	}
	_ = os.Setenv("XLA_FLAGS", strings.TrimSpace(os.Getenv("XLA_FLAGS")+" --xla_gpu_cuda_data_dir="+dir))
}

// HasNvidiaGPU reports whether an NVIDIA GPU seems present: a /dev/nvidia[0-9]* device file, or
// nvidia-smi listing a GPU. It is computed once; tests may replace it.
var HasNvidiaGPU = sync.OnceValue(func() bool {
	if m, _ := filepath.Glob("/dev/nvidia[0-9]*"); len(m) > 0 {
		return true
	}
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return false
	}
	out, err := exec.Command(path, "-L").CombinedOutput()
	return err == nil && strings.Contains(string(out), "GPU ")
})

// DescribeGPUProbe says what HasNvidiaGPU looks at and what it found, for messages, e.g.
// "no /dev/nvidia[0-9]* device; nvidia-smi is not on PATH".
func DescribeGPUProbe() string {
	devs, _ := filepath.Glob("/dev/nvidia[0-9]*")
	parts := []string{"no /dev/nvidia[0-9]* device"}
	if len(devs) > 0 {
		parts[0] = "device " + strings.Join(devs, ", ")
	}
	path, err := exec.LookPath("nvidia-smi")
	switch {
	case err != nil:
		parts = append(parts, "nvidia-smi is not on PATH")
	default:
		out, err := exec.Command(path, "-L").CombinedOutput()
		line := strings.TrimSpace(firstLine(string(out)))
		switch {
		case err != nil && line != "":
			parts = append(parts, "nvidia-smi -L failed: "+line)
		case err != nil:
			parts = append(parts, "nvidia-smi -L failed: "+err.Error())
		case !strings.Contains(string(out), "GPU "):
			parts = append(parts, "nvidia-smi -L lists no GPU")
		default:
			parts = append(parts, "nvidia-smi -L: "+line)
		}
	}
	return strings.Join(parts, "; ")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// GPUs lists the GPUs nvidia-smi reports ("GPU 0: NVIDIA H200 (UUID: ...)"). It returns an
// error when nvidia-smi is missing or fails.
func GPUs(ctx context.Context) ([]string, error) {
	out, err := nvidiaSMI(ctx, "-L")
	if err != nil {
		return nil, err
	}
	var gpus []string
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "GPU ") {
			gpus = append(gpus, line)
		}
	}
	return gpus, nil
}

// GPUMemory returns the memory of the smallest GPU nvidia-smi lists, in bytes
// (`nvidia-smi --query-gpu=memory.total`); an error when nvidia-smi is missing, fails or lists
// no GPU.
func GPUMemory(ctx context.Context) (int64, error) {
	out, err := nvidiaSMI(ctx, "--query-gpu=memory.total", "--format=csv,noheader,nounits")
	if err != nil {
		return 0, err
	}
	return parseGPUMemory(out)
}

// nvidiaSMI runs nvidia-smi with args (20 s at most) and returns its output; the error of
// exec.LookPath when it is missing, else one naming "nvidia-smi ARGS[0]" with its output when
// it fails.
func nvidiaSMI(ctx context.Context, args ...string) (string, error) {
	if _, err := exec.LookPath("nvidia-smi"); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nvidia-smi", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("nvidia-smi %s: %w: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// parseGPUMemory reads nvidia-smi's memory.total lines (MiB, no units) and returns the smallest.
func parseGPUMemory(out string) (int64, error) {
	var least int64
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var mib int64
		if _, err := fmt.Sscan(line, &mib); err != nil || mib <= 0 {
			return 0, fmt.Errorf("nvidia-smi memory.total: unexpected line %q", line)
		}
		if least == 0 || mib<<20 < least {
			least = mib << 20
		}
	}
	if least == 0 {
		return 0, fmt.Errorf("nvidia-smi lists no GPU memory")
	}
	return least, nil
}
