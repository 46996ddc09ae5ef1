package kernel

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
)

// Environment variables that name plugin files explicitly; they win over any search.
const (
	// CUDAPluginEnv names a CUDA PJRT plugin file, e.g. the xla_cuda_plugin.so of pip's
	// jax-cuda13-pjrt package (cifarlib.CUDAPluginEnv).
	CUDAPluginEnv = cifarlib.CUDAPluginEnv
	// CPUPluginEnv names an XLA CPU PJRT plugin file (cifarlib.KernelCPUPluginEnv; cifarlib's
	// own $CIFARLAB_XLA_CPU_PLUGIN wins over it).
	CPUPluginEnv = cifarlib.KernelCPUPluginEnv
	// PJRTPluginPathEnv is go-xla's list of folders to search for plugins (":"-separated).
	PJRTPluginPathEnv = "PJRT_PLUGIN_LIBRARY_PATH"
)

// XLAPluginDirs returns the folders go-xla v0.4 searches for PJRT plugins, in its order:
// $PJRT_PLUGIN_LIBRARY_PATH when set; otherwise ~/.local/lib/go-xla (and its nvidia/),
// ~/.local/lib/gomlx/pjrt, /usr/local/lib/go-xla (and nvidia/), /usr/local/lib/gomlx/pjrt,
// the absolute entries of $LD_LIBRARY_PATH and the folders of /etc/ld.so.conf.
func XLAPluginDirs() []string {
	if v, ok := os.LookupEnv(PJRTPluginPathEnv); ok {
		var dirs []string
		for _, d := range strings.Split(v, ":") {
			if d != "" {
				dirs = append(dirs, d)
			}
		}
		return dirs
	}
	var dirs []string
	if home, err := os.UserHomeDir(); err == nil {
		g := filepath.Join(home, ".local", "lib", "go-xla")
		dirs = append(dirs, g, filepath.Join(g, "nvidia"), filepath.Join(home, ".local", "lib", "gomlx", "pjrt"))
	}
	dirs = append(dirs, "/usr/local/lib/go-xla", "/usr/local/lib/go-xla/nvidia", "/usr/local/lib/gomlx/pjrt")
	for _, d := range strings.Split(os.Getenv("LD_LIBRARY_PATH"), ":") {
		if filepath.IsAbs(d) {
			dirs = append(dirs, d)
		}
	}
	return ldSoConfDirs(dirs, "/etc/ld.so.conf", 0)
}

var ldInclude = regexp.MustCompile(`^\s*include\s+(.*)$`)

func ldSoConfDirs(dirs []string, file string, depth int) []string {
	f, err := os.Open(file)
	if err != nil || depth > 8 {
		return dirs
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if m := ldInclude.FindStringSubmatch(line); m != nil {
			pattern := strings.TrimSpace(m[1])
			if !filepath.IsAbs(pattern) {
				pattern = filepath.Join(filepath.Dir(file), pattern)
			}
			matches, _ := filepath.Glob(pattern)
			for _, inc := range matches {
				dirs = ldSoConfDirs(dirs, inc, depth+1)
			}
			continue
		}
		dirs = append(dirs, line)
	}
	return dirs
}

// pluginName mirrors go-xla's naming rule: pjrt_c_api_NAME_plugin.so or pjrt[-_]plugin[-_]NAME.so.
var pluginName = []*regexp.Regexp{
	regexp.MustCompile(`^pjrt_c_api_(.+)_plugin\.so$`),
	regexp.MustCompile(`^pjrt[-_]plugin[-_](.+)\.so$`),
}

// PluginNameOf returns the plugin name go-xla derives from a plugin file name, or "" when
// go-xla would not recognise the file when searching folders (it can still load it by
// absolute path).
func PluginNameOf(path string) string {
	base := filepath.Base(path)
	for _, re := range pluginName {
		if m := re.FindStringSubmatch(base); m != nil {
			return m[1]
		}
	}
	return ""
}

// FindXLAPlugins lists the PJRT plugin files in XLAPluginDirs, by plugin name (first
// found wins, as in go-xla). It only looks at file names; loading is left to go-xla.
func FindXLAPlugins() map[string]string {
	found := map[string]string{}
	for _, dir := range XLAPluginDirs() {
		for _, pat := range []string{"pjrt-plugin-*.so", "pjrt_plugin_*.so", "pjrt_c_api_*_plugin.so"} {
			matches, _ := filepath.Glob(filepath.Join(dir, pat))
			sort.Strings(matches)
			for _, m := range matches {
				if name := PluginNameOf(m); name != "" && fileExists(m) {
					if _, dup := found[name]; !dup {
						found[name] = m
					}
				}
			}
		}
	}
	return found
}

// PythonCandidates are the interpreters searched for pip-installed plugins: the lab venv,
// Debian's /usr/bin/python3 and the python3 first on PATH.
func PythonCandidates(repo Repo) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p == "" || seen[p] {
			return
		}
		if fileExists(p) {
			seen[p] = true
			out = append(out, p)
		}
	}
	if repo.Dir != "" {
		add(filepath.Join(repo.VenvDir(), "bin", "python"))
	}
	add("/usr/bin/python3")
	if p, err := exec.LookPath("python3"); err == nil {
		add(p)
	}
	return out
}

// SitePackages returns the sys.path folders of the given Python interpreters.
func SitePackages(ctx context.Context, pythons []string) []string {
	var dirs []string
	seen := map[string]bool{}
	for _, py := range pythons {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		out, err := exec.CommandContext(ctx, py, "-c", "import sys, json; print(json.dumps(sys.path))").Output()
		cancel()
		if err != nil {
			continue
		}
		var paths []string
		if json.Unmarshal(out, &paths) != nil {
			continue
		}
		for _, p := range paths {
			if p != "" && !seen[p] && dirExists(p) {
				seen[p] = true
				dirs = append(dirs, p)
			}
		}
	}
	return dirs
}

// JaxCUDAPluginFile is where pip's jax-cuda13-pjrt (and jax-cuda12-pjrt) put the CUDA PJRT
// plugin, relative to site-packages: jax_plugins/xla_cuda13/xla_cuda_plugin.so.
const JaxCUDAPluginFile = "jax_plugins/xla_cuda*/xla_cuda_plugin.so"

// FindJaxCUDAPlugins returns the xla_cuda_plugin.so files of pip-installed
// jax-cuda1x-pjrt packages in the given site-packages folders, newest CUDA first.
func FindJaxCUDAPlugins(siteDirs []string) []string {
	var out []string
	for _, d := range siteDirs {
		matches, _ := filepath.Glob(filepath.Join(d, JaxCUDAPluginFile))
		sort.Sort(sort.Reverse(sort.StringSlice(matches)))
		out = append(out, matches...)
	}
	return out
}

// GPUs lists the GPUs nvidia-smi reports ("GPU 0: NVIDIA H200 (UUID: ...)"). It returns
// an error when nvidia-smi is missing or fails.
func GPUs(ctx context.Context) ([]string, error) {
	if _, err := exec.LookPath("nvidia-smi"); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nvidia-smi", "-L").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("nvidia-smi -L: %w: %s", err, strings.TrimSpace(string(out)))
	}
	var gpus []string
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "GPU ") {
			gpus = append(gpus, line)
		}
	}
	return gpus, nil
}
