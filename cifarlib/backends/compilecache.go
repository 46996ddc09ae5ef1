package backends

import (
	"fmt"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/cifarlab/cifarlab/internal/compilecache"
	"github.com/gomlx/go-xla/compute/xla"
	"github.com/gomlx/go-xla/pjrt"
)

// The compile cache: every XLA backend this package creates (New, Lazy, NewWithDevices) compiles
// through it, so that a program compiled once on this machine, by any process (a kernel's cell,
// its lab process, `cifarlab train`, a sweep task, a test), is loaded by the next one instead of
// compiled again. Its folders are compilecache's settings ($CIFARLAB_COMPILE_CACHE, default
// ~/.cache/cifarlab/xla-programs; $CIFARLAB_COMPILE_CACHE_SHARED; $CIFARLAB_COMPILE_CACHE_MAX),
// read once per process, when its first XLA backend is created. A program's key holds
// everything its compiled code depends on (programKey).

var (
	cacheOnce    sync.Once
	processCache *compilecache.Cache
)

// CompileCache returns the process's compile cache, opened from the settings the first time
// (nil when $CIFARLAB_COMPILE_CACHE is off and no shared folder is set, or the settings are
// wrong, which is said once).
func CompileCache() *compilecache.Cache {
	cacheOnce.Do(func() {
		cfg, off, err := compilecache.ConfigFromEnv()
		if err != nil {
			sayNote(err.Error() + ": compiled programs are not kept")
			return
		}
		if !off {
			processCache = compilecache.Open(cfg, sayNote)
			sayForeignShared(processCache)
		}
	})
	return processCache
}

// sayForeignShared says, once per process, when the shared folders hold compiled programs but
// none for this machine (an image's, built on another CPU model): rather than compiling silently
// where a workshop expected to load.
func sayForeignShared(c *compilecache.Cache) {
	if len(c.Shared()) == 0 {
		return
	}
	id, desc := Machine()
	if line := compilecache.ForeignShared(c.SharedFits(id), desc); line != "" {
		sayNote(line)
	}
}

// pendingNotes are the lines the cache said that no program record has taken yet.
var pendingNotes struct {
	mu    sync.Mutex
	lines []string
}

// sayNote says a line of the compile cache on standard error, and keeps it for the record of
// the program being compiled (a cell shows it: its lab process's standard error goes to a log).
func sayNote(line string) {
	fmt.Fprintln(os.Stderr, "cifarlab: "+line)
	pendingNotes.mu.Lock()
	pendingNotes.lines = append(pendingNotes.lines, line)
	pendingNotes.mu.Unlock()
}

// takeNotes returns the lines said since the last call.
func takeNotes() []string {
	pendingNotes.mu.Lock()
	defer pendingNotes.mu.Unlock()
	lines := pendingNotes.lines
	pendingNotes.lines = nil
	return lines
}

// installProgramHook makes xb's client compile through the compile cache, and record each
// program (ProgramsSince), cache or not.
func installProgramHook(xb *xla.Backend) {
	client := xb.PJRTClient()
	if client == nil {
		return
	}
	h := &programHook{cache: CompileCache(), client: client}
	client.SetCompileHook(h.compile)
}

// programHook compiles the programs of one client.
type programHook struct {
	cache   *compilecache.Cache
	client  *pjrt.Client
	machine sync.Once
	facts   machineFacts
}

// compile is the client's pjrt.CompileHook: the program loaded from the cache, else compiled and
// stored there.
func (h *programHook) compile(req *pjrt.CompileRequest) (*pjrt.LoadedExecutable, error) {
	rec := ProgramRecord{Name: moduleName(req.Program), Bytes: len(req.Program), Start: time.Now(), client: h.client}
	defer func() {
		rec.Duration, rec.Notes = time.Since(rec.Start), takeNotes()
		addProgramRecord(rec)
	}()
	if h.cache == nil {
		return req.Compile()
	}
	h.machine.Do(func() { h.facts = describeMachine(req.Client) })
	key := programKey(h.facts, req)
	if data, _, ok := h.cache.Get(key); ok {
		exec, err := req.Client.DeserializeAndLoad(data)
		if err == nil {
			rec.Loaded = true
			return exec, nil
		}
		sayNote(fmt.Sprintf("compile cache: the entry of %s (%s) does not load (%v): compiling the program again",
			rec.Name, key.String()[:16], firstLine(err.Error())))
	}
	exec, err := req.Compile()
	if err != nil {
		return nil, err
	}
	took := time.Since(rec.Start)
	data, err := exec.Serialize()
	if err != nil {
		sayOnce("serialize", fmt.Sprintf("compile cache: the plugin does not serialize compiled programs (%v): they are not kept", firstLine(err.Error())))
		return exec, nil
	}
	h.cache.Put(key, compilecache.Meta{Program: rec.Name, Plugin: h.facts.plugin, Machine: h.facts.summary(),
		MachineID: h.facts.machineID(), CompileSeconds: took.Seconds()}, data)
	return exec, nil
}

// said holds the kinds of problems sayOnce said.
var said sync.Map

// sayOnce says line the first time a problem of kind is met in this process.
func sayOnce(kind, line string) {
	if _, done := said.LoadOrStore(kind, true); !done {
		sayNote(line)
	}
}

// moduleRE finds a StableHLO program's module name.
var moduleRE = regexp.MustCompile(`^\s*module\s+@"?([^\s"{]+)`)

// moduleName is the name of a StableHLO program's module ("" when it has none).
func moduleName(program []byte) string {
	head := program[:min(len(program), 512)]
	if m := moduleRE.FindSubmatch(head); m != nil {
		return string(m[1])
	}
	return ""
}
