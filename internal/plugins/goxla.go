package plugins

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/gomlx/go-xla/pjrt"
)

// GoXLA lists the PJRT plugins go-xla finds (by name, e.g. "cpu", "cuda", with their paths),
// searched once per process: go-xla reads $PJRT_PLUGIN_LIBRARY_PATH at start and dlopens each
// candidate to check it. It never downloads anything.
var GoXLA = sync.OnceValue(func() map[string]string {
	plugins := map[string]string{}
	func() {
		defer func() { _ = recover() }()
		plugins = pjrt.AvailablePlugins()
	}()
	return plugins
})

// GoXLAName returns the name of the plugin go-xla finds for base ("cpu" also matches
// "cpu_v0.83.1", "cuda" any CUDA name), or "".
func GoXLAName(base string) string {
	plugins := GoXLA()
	if _, ok := plugins[base]; ok {
		return base
	}
	for _, n := range sortedKeys(plugins) {
		if strings.HasPrefix(n, base+"_") || (base == "cuda" && pjrt.IsCUDAName(n)) {
			return n
		}
	}
	return ""
}

// DescribeGoXLA lists the names of the plugins go-xla finds, "none" when there are none.
func DescribeGoXLA() string {
	if names := sortedKeys(GoXLA()); len(names) > 0 {
		return strings.Join(names, ", ")
	}
	return "none"
}

// GoXLASearchDescription says where go-xla searches, for error messages.
func GoXLASearchDescription() string {
	if p := os.Getenv(PJRTPathEnv); p != "" {
		return "$" + PJRTPathEnv + "=" + p
	}
	return "~/.local/lib/go-xla, /usr/local/lib/go-xla and the system library paths (set " +
		PJRTPathEnv + " to add folders)"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Dirs returns the folders go-xla v0.4 searches for PJRT plugins, in its order, as the
// environment is now (GoXLA sees it as it was at process start): $PJRT_PLUGIN_LIBRARY_PATH
// when set; otherwise ~/.local/lib/go-xla (and its nvidia/), ~/.local/lib/gomlx/pjrt,
// /usr/local/lib/go-xla (and nvidia/), /usr/local/lib/gomlx/pjrt, the absolute entries of
// $LD_LIBRARY_PATH and the folders of /etc/ld.so.conf.
func Dirs() []string {
	if v, ok := os.LookupEnv(PJRTPathEnv); ok {
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

// NameOf returns the plugin name go-xla derives from a plugin file name, or "" when go-xla
// would not recognise the file when searching folders (it can still load it by absolute path).
func NameOf(path string) string {
	base := filepath.Base(path)
	for _, re := range pluginName {
		if m := re.FindStringSubmatch(base); m != nil {
			return m[1]
		}
	}
	return ""
}

// FindFiles lists the PJRT plugin files in Dirs by plugin name (first found wins, as in
// go-xla). It only looks at file names, in the environment as it is now; loading is left to
// go-xla.
func FindFiles() map[string]string {
	found := map[string]string{}
	for _, dir := range Dirs() {
		for _, pat := range []string{"pjrt-plugin-*.so", "pjrt_plugin_*.so", "pjrt_c_api_*_plugin.so"} {
			matches, _ := filepath.Glob(filepath.Join(dir, pat))
			sort.Strings(matches)
			for _, m := range matches {
				if name := NameOf(m); name != "" && isFile(m) {
					if _, dup := found[name]; !dup {
						found[name] = m
					}
				}
			}
		}
	}
	return found
}
