package backends

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/cifarlab/cifarlab/internal/compilecache"
	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/gomlx/go-xla/pjrt"
)

// cacheFormat is the version of what programKey hashes and of how this package uses the cache:
// raising it leaves every entry behind.
const cacheFormat = "cifarlab compile cache 1"

// machineFacts is what a client's compiled code depends on besides the program and its compile
// options: the binding, the plugin, the devices, the XLA flags that change code generation and
// the hardware. Each line is part of every key of the client's programs.
type machineFacts struct {
	lines  []string // "what: value"
	plugin string   // how an entry names its plugin
}

// hardware returns the facts' CPU and GPU lines ("cpu: ...", "gpu: ..."), part of every key.
func (f machineFacts) hardware() (cpu, gpu string) {
	for _, l := range f.lines {
		if v, ok := strings.CutPrefix(l, "cpu: "); ok {
			cpu = v
		} else if v, ok := strings.CutPrefix(l, "gpu: "); ok {
			gpu = v
		}
	}
	return cpu, gpu
}

// machineID identifies the hardware of the facts' keys: a digest of their CPU and GPU lines, so
// that an entry says which machine it loads on (compilecache.Meta.MachineID).
func (f machineFacts) machineID() string {
	cpu, gpu := f.hardware()
	sum := sha256.Sum256([]byte("cpu: " + cpu + "\ngpu: " + gpu))
	return hex.EncodeToString(sum[:8])
}

// summary describes the facts' hardware for people, in an entry's description and in what the
// cache says: "CPU AuthenticAMD family 25 model 17 (flags 0c4e7a1b), no GPU".
func (f machineFacts) summary() string {
	cpu, gpu := f.hardware()
	head, flags, ok := strings.Cut(cpu, " flags=")
	if !ok {
		head, flags, _ = strings.Cut(cpu, " Features=")
	}
	names := map[string]string{"vendor_id": "", "cpu_family": "family ", "model": "model ", "CPU_implementer": "implementer ", "CPU_part": "part "}
	desc := "CPU"
	for _, kv := range strings.Fields(head) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if name, known := names[k]; known {
				desc += " " + name + v
			}
		}
	}
	if flags != "" {
		sum := sha256.Sum256([]byte(flags))
		desc += fmt.Sprintf(" (flags %x)", sum[:4])
	}
	if gpu == "" {
		return desc + ", no GPU"
	}
	return desc + ", GPU " + gpu
}

// Machine identifies this machine's hardware as the compile cache's keys hold it (the CPU and
// the GPU models; id as in the entries' compilecache.Meta.MachineID) and describes it.
func Machine() (id, desc string) {
	f := machineFacts{lines: hardwareLines()}
	if factsHook != nil {
		factsHook(&f)
	}
	return f.machineID(), f.summary()
}

// hardwareLines are the facts of this machine's hardware.
func hardwareLines() []string {
	return []string{"cpu: " + cpuFeatures(), "gpu: " + strings.Join(plugins.GPUModels(), ", ")}
}

// factsHook, when set (tests), changes the facts of a client: e.g. a faked plugin version.
var factsHook func(*machineFacts)

// describeMachine returns the facts of client's programs.
func describeMachine(client *pjrt.Client) machineFacts {
	p := client.Plugin()
	major, minor := p.Version()
	file := pluginFile(p.Path())
	var attrs []string
	for k, v := range p.Attributes() {
		attrs = append(attrs, fmt.Sprintf("%s=%v", k, v))
	}
	slices.Sort(attrs)
	var devices []string
	for _, d := range client.AddressableDevices() {
		if desc, err := d.GetDescription(); err == nil {
			devices = append(devices, desc.DebugString())
		}
	}
	f := machineFacts{
		plugin: pluginName(client.Platform(), client.PlatformVersion(), p.Path()),
		lines: []string{
			"binding: " + cacheFormat + ", " + bindingVersion(),
			fmt.Sprintf("plugin: platform %q version %q, PJRT C API %d.%d, attributes %s, file %s",
				client.Platform(), client.PlatformVersion(), major, minor, strings.Join(attrs, " "), file),
			fmt.Sprintf("devices: %d: %s", len(devices), strings.Join(devices, ", ")),
			"xla flags: " + codegenXLAFlags(os.Getenv("XLA_FLAGS")),
		},
	}
	f.lines = append(f.lines, hardwareLines()...)
	if factsHook != nil {
		factsHook(&f)
	}
	return f
}

// pluginName is how an entry names its plugin: "cpu (pjrt_c_api_cpu_plugin.so)", "cuda 12.8
// (xla_cuda_plugin.so)".
func pluginName(platform, version, path string) string {
	name := platform
	if version != "" && version != platform {
		name += " " + version
	}
	return name + " (" + filepath.Base(path) + ")"
}

// programKey is the key of req's program on a client of facts: a digest of the facts, the
// program's format and bytes, and its serialized compile options (the devices it is assigned
// to, its replicas and partitions, XLA's debug options), each length-prefixed.
func programKey(facts machineFacts, req *pjrt.CompileRequest) compilecache.Key {
	h := sha256.New()
	field := func(name string, b []byte) {
		_ = binary.Write(h, binary.LittleEndian, uint64(len(name)))
		io.WriteString(h, name)
		_ = binary.Write(h, binary.LittleEndian, uint64(len(b)))
		h.Write(b)
	}
	for _, l := range facts.lines {
		field("fact", []byte(l))
	}
	field("format", []byte(req.ProgramFormat))
	field("options", req.CompileOptions)
	field("program", canonicalProgram(req.Program))
	var k compilecache.Key
	h.Sum(k[:0])
	return k
}

// ssaUUID finds a UUID in a value's name of a StableHLO program: GoMLX names each metric's
// variables after a random UUID ("%_metrics_Moving_Average_Loss_uuid_b3034f39_2133_..._mean"),
// so the same train step has other names in every process.
var ssaUUID = regexp.MustCompile(`(%[\w.$-]*?)([0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12})`)

// canonicalProgram is program with the UUIDs in its values' names numbered in the order they
// first appear, for its key: names do not change what a program computes (its parameters are
// passed by position), and numbering keeps distinct names distinct (the number is written
// between NUL bytes, which no program text holds).
func canonicalProgram(program []byte) []byte {
	if !bytes.Contains(program, []byte("uuid_")) {
		return program
	}
	seen := map[string]int{}
	return ssaUUID.ReplaceAllFunc(program, func(m []byte) []byte {
		sub := ssaUUID.FindSubmatch(m)
		n, ok := seen[string(sub[2])]
		if !ok {
			n = len(seen) + 1
			seen[string(sub[2])] = n
		}
		return fmt.Appendf(append([]byte(nil), sub[1]...), "\x00%d\x00", n)
	})
}

// bindingVersion is the version of go-xla this program was built with (the repository's
// patched copy: third_party/README.md), from the build information.
func bindingVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/gomlx/go-xla" {
				return "go-xla " + d.Version + " (patched: serialize, compile hook)"
			}
		}
	}
	return "go-xla (unknown version)"
}

// fileFacts caches pluginFile's answers, by path.
var fileFacts sync.Map

// pluginFile identifies a plugin file's build without reading all of it (a CPU plugin is 200 MB,
// and has no build ID): its pip package's version where the file says it, its size, and a
// digest of its first and last MiB (an ELF file's headers, section table and symbol versions).
func pluginFile(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if v, ok := fileFacts.Load(path); ok {
		return v.(string)
	}
	f, err := os.Open(path)
	if err != nil {
		return "unreadable " + filepath.Base(path)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "unreadable " + filepath.Base(path)
	}
	h := sha256.New()
	const part = 1 << 20
	_, _ = io.Copy(h, io.NewSectionReader(f, 0, part))
	_, _ = io.Copy(h, io.NewSectionReader(f, max(0, fi.Size()-part), part))
	id := fmt.Sprintf("%s %d bytes %s", plugins.JaxCUDAPackage(path), fi.Size(), hex.EncodeToString(h.Sum(nil))[:16])
	id = strings.TrimSpace(id)
	fileFacts.Store(path, id)
	return id
}

// codegenXLAFlags is $XLA_FLAGS less the flags that only say where XLA keeps or dumps things
// (a per-user autotune cache folder, dumps), which do not change the code it generates.
func codegenXLAFlags(flags string) string {
	var keep []string
	for _, f := range strings.Fields(flags) {
		name, _, _ := strings.Cut(f, "=")
		switch {
		case name == plugins.FlagAutotuneCacheDir, name == "--xla_gpu_kernel_cache_file",
			strings.HasPrefix(name, "--xla_dump"), strings.HasPrefix(name, "--xla_gpu_dump"):
			continue
		}
		keep = append(keep, f)
	}
	return strings.Join(keep, " ")
}

// cpuFeatures describes this machine's CPU as XLA's CPU code generation sees it: its
// architecture, vendor, family, model and feature flags (the first processor's, from
// /proc/cpuinfo); computed once.
var cpuFeatures = sync.OnceValue(func() string {
	desc := runtime.GOARCH
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return desc
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			break // the first processor's block ends
		}
		k, v, ok := strings.Cut(line, ":")
		switch k = strings.TrimSpace(k); {
		case !ok:
		case k == "vendor_id", k == "cpu family", k == "model", k == "flags", k == "CPU implementer",
			k == "CPU architecture", k == "CPU variant", k == "CPU part", k == "Features":
			desc += fmt.Sprintf(" %s=%s", strings.ReplaceAll(k, " ", "_"), strings.TrimSpace(v))
		}
	}
	return desc
})
