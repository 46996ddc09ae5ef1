package backends

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/cifarlab/cifarlab/internal/compilecache"
	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/cifarlab/cifarlab/internal/testenv"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"
)

// cacheChildEnv runs TestCompileCacheChild's body in a child process: each process opens the
// compile cache once, from its settings, as a new kernel or CLI run does.
const cacheChildEnv = "CIFARLAB_TEST_COMPILE_CACHE_CHILD"

// fakeEnv makes the child describe another machine: "plugin", "cpu" or "gpu", then "=" and the
// value that replaces that fact (a faked plugin version, CPU or GPU model).
const fakeEnv = "CIFARLAB_TEST_FAKE_FACT"

// TestCompileCacheChild is the child of the compile cache tests (it does nothing in a normal
// run): New on the XLA CPU plugin, then a small convolution network's forward and gradient
// compiled and run; it prints a digest of the results and, per program, whether it was
// loaded from the cache.
func TestCompileCacheChild(t *testing.T) {
	if os.Getenv(cacheChildEnv) == "" {
		t.Skip("the child of the compile cache tests")
	}
	if what, value, ok := strings.Cut(os.Getenv(fakeEnv), "="); ok {
		factsHook = func(f *machineFacts) {
			for i, l := range f.lines {
				if strings.HasPrefix(l, what+": ") {
					f.lines[i] = what + ": " + value
				}
			}
		}
	}
	b, err := New("cpu")
	require.NoError(t, err)
	mark := ProgramMark()
	exec := graph.MustNewExec(b, func(x, k *graph.Node) []*graph.Node {
		y := graph.Convolve(x, k).PadSame().Done()
		loss := graph.ReduceAllSum(graph.Mul(graph.Tanh(y), y))
		return append([]*graph.Node{loss}, graph.Gradient(loss, x, k)...)
	})
	x := make([]float32, 2*8*8*16)
	for i := range x {
		x[i] = float32(i%11)/5 - 1
	}
	k := make([]float32, 3*3*16*16)
	for i := range k {
		k[i] = float32(i%7)/7 - 0.5
	}
	outs := exec.MustExec(tensors.FromFlatDataAndDimensions(x, 2, 8, 8, 16), tensors.FromFlatDataAndDimensions(k, 3, 3, 16, 16))
	h := sha256.New()
	for _, o := range outs {
		fmt.Fprint(h, o.Value())
	}
	fmt.Printf("\nRESULT %x\n", h.Sum(nil))
	for _, r := range ProgramsSince(b, mark) {
		fmt.Printf("PROGRAM %s loaded=%v\n", r.Name, r.Loaded)
	}
}

// cacheRun is what one child process did.
type cacheRun struct {
	result string
	loaded []bool // per program compiled or loaded
	stderr string
	notes  []string // the compile cache's lines on standard error
}

// runCacheChild runs the child with the compile cache settings env (and the XLA CPU plugin
// cpu), and returns what it did; the child must succeed.
func runCacheChild(t *testing.T, cpu string, env ...string) cacheRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCompileCacheChild$", "-test.count=1", "-test.v")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CIFARLAB_COMPILE_CACHE") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, append([]string{cacheChildEnv + "=1", plugins.XLACPUEnv + "=" + cpu}, env...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s\n%s", stdout.String(), stderr.String())
	out := stdout.String() + stderr.String()
	m := regexp.MustCompile(`\nRESULT ([0-9a-f]+)\n`).FindStringSubmatch(out)
	require.NotNil(t, m, "%s", out)
	r := cacheRun{result: m[1], stderr: stderr.String()}
	for _, p := range regexp.MustCompile(`PROGRAM \S* loaded=(true|false)`).FindAllStringSubmatch(out, -1) {
		r.loaded = append(r.loaded, p[1] == "true")
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "cifarlab: compile cache: ") {
			r.notes = append(r.notes, line)
		}
	}
	return r
}

// A program compiled by one process is loaded by the next, which computes the same, bit for bit,
// and says nothing; with the cache off, the same again.
func TestCompileCacheAcrossProcesses(t *testing.T) {
	cpu := testenv.XLACPUPluginOrSkip(t).Path
	dir := filepath.Join(t.TempDir(), "cache")
	first := runCacheChild(t, cpu, compilecache.DirEnv+"="+dir)
	require.Equal(t, []bool{false}, first.loaded, "the first process compiles")
	second := runCacheChild(t, cpu, compilecache.DirEnv+"="+dir)
	require.Equal(t, []bool{true}, second.loaded, "the second loads it")
	off := runCacheChild(t, cpu, compilecache.DirEnv+"=off")
	require.Equal(t, []bool{false}, off.loaded)
	require.Equal(t, first.result, second.result, "the loaded program computes the same, bit for bit")
	require.Equal(t, first.result, off.result)
	require.Empty(t, append(append(first.notes, second.notes...), off.notes...))
	entries, err := compilecache.Open(compilecache.Config{Dir: dir}, nil).Entries()
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.EqualValues(t, 1, entries[0].Hits)
	require.Contains(t, entries[0].Meta.Plugin, "cpu")
}

// A broken entry is said in one line, compiled again (never loaded, never a crash), and
// replaced: the next process loads the program again.
func TestCompileCacheBrokenEntry(t *testing.T) {
	cpu := testenv.XLACPUPluginOrSkip(t).Path
	for _, tc := range []struct {
		name, says string
		mangle     func(raw, other []byte) []byte
	}{
		{"zero-length", "is empty (zero bytes)", func([]byte, []byte) []byte { return nil }},
		{"truncated", "is truncated", func(raw, _ []byte) []byte { return raw[:len(raw)*2/3] }},
		{"corrupt", "is corrupt (its checksum does not match)", func(raw, _ []byte) []byte {
			raw = append([]byte(nil), raw...)
			raw[len(raw)/2] ^= 1
			return raw
		}},
		{"another program's", "is another program's", func(_, other []byte) []byte { return other }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			setting := compilecache.DirEnv + "=" + dir
			good := runCacheChild(t, cpu, setting)
			entry := onlyEntry(t, dir)
			raw, err := os.ReadFile(entry)
			require.NoError(t, err)
			// Another program's whole, valid entry: the same program on a faked plugin version.
			other := runCacheChild(t, cpu, setting, fakeEnv+"=plugin=another version")
			require.Equal(t, []bool{false}, other.loaded)
			var otherRaw []byte
			files, _ := filepath.Glob(filepath.Join(dir, "*.xla"))
			for _, f := range files {
				if f != entry {
					otherRaw, err = os.ReadFile(f)
					require.NoError(t, err)
				}
			}
			require.NotEmpty(t, otherRaw)
			require.NoError(t, os.WriteFile(entry, tc.mangle(raw, otherRaw), 0o600))

			broken := runCacheChild(t, cpu, setting)
			require.Equal(t, []bool{false}, broken.loaded, "compiled again, not loaded")
			require.Equal(t, good.result, broken.result)
			require.Len(t, broken.notes, 1, "one line: %s", broken.stderr)
			require.Contains(t, broken.notes[0], "cifarlab: compile cache: entry "+entry+" "+tc.says)
			require.Contains(t, broken.notes[0], "compiling the program again")
			again := runCacheChild(t, cpu, setting)
			require.Equal(t, []bool{true}, again.loaded, "the program compiled again replaced the broken entry")
			require.Empty(t, again.notes)
		})
	}
}

// onlyEntry returns the one entry file of dir.
func onlyEntry(t *testing.T, dir string) string {
	files, err := filepath.Glob(filepath.Join(dir, "*.xla"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	return files[0]
}

// An entry compiled for another plugin version, another CPU or another GPU model is never
// loaded: the program is compiled, and kept beside it.
func TestCompileCacheOtherMachineNeverLoads(t *testing.T) {
	cpu := testenv.XLACPUPluginOrSkip(t).Path
	dir := filepath.Join(t.TempDir(), "cache")
	setting := compilecache.DirEnv + "=" + dir
	base := runCacheChild(t, cpu, setting)
	require.Equal(t, []bool{false}, base.loaded)
	entries := 1
	for _, fake := range []string{"plugin=platform \"cpu\" version \"0.0.0-faked\"", "cpu=amd64 vendor_id=FakeIntel flags=sse2",
		"gpu=NVIDIA H100 80GB HBM3"} {
		other := runCacheChild(t, cpu, setting, fakeEnv+"="+fake)
		require.Equal(t, []bool{false}, other.loaded, "%s: compiled, not loaded", fake)
		require.Equal(t, base.result, other.result)
		entries++
		files, _ := filepath.Glob(filepath.Join(dir, "*.xla"))
		require.Len(t, files, entries, "%s: kept beside the others", fake)
	}
	same := runCacheChild(t, cpu, setting)
	require.Equal(t, []bool{true}, same.loaded, "this machine's entry is still loaded")
}

// Processes compiling the same program at once all succeed, with the same results; the cache
// then holds one whole entry, which loads.
func TestCompileCacheConcurrentProcesses(t *testing.T) {
	cpu := testenv.XLACPUPluginOrSkip(t).Path
	dir := filepath.Join(t.TempDir(), "cache")
	setting := compilecache.DirEnv + "=" + dir
	runs := make([]cacheRun, 3)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() { runs[i] = runCacheChild(t, cpu, setting) })
	}
	wg.Wait()
	for _, r := range runs {
		require.Equal(t, runs[0].result, r.result)
		require.Empty(t, r.notes, r.stderr)
	}
	onlyEntry(t, dir)
	require.Equal(t, []bool{true}, runCacheChild(t, cpu, setting).loaded)
}

// A cache folder that other users can write is refused, with the setting that shares one
// read-only; a shared folder is loaded from but not written; a folder that cannot be used is
// said once and the program still compiles and runs.
func TestCompileCacheFolders(t *testing.T) {
	cpu := testenv.XLACPUPluginOrSkip(t).Path
	open := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.Mkdir(open, 0o700))
	require.NoError(t, os.Chmod(open, 0o777))
	refused := runCacheChild(t, cpu, compilecache.DirEnv+"="+open)
	require.Equal(t, []bool{false}, refused.loaded)
	require.Len(t, refused.notes, 1, refused.stderr)
	require.Contains(t, refused.notes[0], open+" ($CIFARLAB_COMPILE_CACHE) is writable by other users (mode 0777)")
	require.Contains(t, refused.notes[0], "share compiled programs read-only with $CIFARLAB_COMPILE_CACHE_SHARED")
	files, _ := os.ReadDir(open)
	require.Empty(t, files, "nothing written there")

	shared := filepath.Join(t.TempDir(), "shared")
	require.Equal(t, []bool{false}, runCacheChild(t, cpu, compilecache.DirEnv+"="+shared).loaded)
	require.NoError(t, os.Chmod(shared, 0o755))
	own := filepath.Join(t.TempDir(), "own")
	layered := runCacheChild(t, cpu, compilecache.DirEnv+"="+own, compilecache.SharedEnv+"="+shared)
	require.Equal(t, []bool{true}, layered.loaded, "loaded from the shared folder")
	require.Equal(t, refused.result, layered.result)
	require.Empty(t, layered.notes, "the shared folder holds this machine's programs: nothing to say")
	entries, _ := filepath.Glob(filepath.Join(own, "*.xla"))
	require.Empty(t, entries, "nothing compiled, nothing written to the user's folder")
}

// A shared folder whose programs were all compiled on another machine (an image built on
// another CPU model) is said once, with both machines, rather than compiled over silently.
func TestCompileCacheSharedOfAnotherMachine(t *testing.T) {
	cpu := testenv.XLACPUPluginOrSkip(t).Path
	shared := filepath.Join(t.TempDir(), "shared")
	built := runCacheChild(t, cpu, compilecache.DirEnv+"="+shared, fakeEnv+"=cpu=amd64 vendor_id=FakeIntel cpu_family=6 model=85 flags=sse2")
	require.Equal(t, []bool{false}, built.loaded)
	require.NoError(t, os.Chmod(shared, 0o755))

	run := runCacheChild(t, cpu, compilecache.DirEnv+"="+filepath.Join(t.TempDir(), "own"), compilecache.SharedEnv+"="+shared)
	require.Equal(t, []bool{false}, run.loaded, "another machine's program never loads")
	require.Equal(t, built.result, run.result)
	_, here := Machine()
	require.Len(t, run.notes, 1, run.stderr)
	require.Contains(t, run.notes[0], "cifarlab: compile cache: the shared folder "+shared+" ($CIFARLAB_COMPILE_CACHE_SHARED) holds 1 programs "+
		"compiled on another machine (CPU FakeIntel family 6 model 85 (flags ")
	require.Contains(t, run.notes[0], "), none for this one ("+here+"): they do not load here")

	// Once this machine's programs are there too, nothing is said.
	require.NoError(t, os.Chmod(shared, 0o700))
	runCacheChild(t, cpu, compilecache.DirEnv+"="+shared)
	require.NoError(t, os.Chmod(shared, 0o755))
	both := runCacheChild(t, cpu, compilecache.DirEnv+"="+filepath.Join(t.TempDir(), "own"), compilecache.SharedEnv+"="+shared)
	require.Equal(t, []bool{true}, both.loaded)
	require.Empty(t, both.notes)
}
