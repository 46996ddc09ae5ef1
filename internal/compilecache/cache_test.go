package compilecache

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// notes collects what a Cache says.
type notes struct {
	mu    sync.Mutex
	lines []string
}

func (n *notes) add(line string) { n.mu.Lock(); n.lines = append(n.lines, line); n.mu.Unlock() }

func (n *notes) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.lines...)
}

// open opens a cache on cfg, with its notes.
func open(cfg Config) (*Cache, *notes) {
	n := &notes{}
	return Open(cfg, n.add), n
}

func key(s string) Key { return sha256.Sum256([]byte(s)) }

// program is some bytes standing for a serialized executable.
func program(s string, size int) []byte {
	return bytes.Repeat([]byte(s), size/len(s)+1)[:size]
}

// An entry stored by one Cache is found by another on the same folder (a new process), with
// its description; a key never stored is a miss.
func TestPutGetAcrossOpens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	c, n := open(Config{Dir: dir})
	require.Equal(t, dir, c.Dir())
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "created for the user alone")
	data := program("train step", 5000)
	c.Put(key("a"), Meta{Program: "TrainStep", Plugin: "cpu 0.11.2"}, data)

	again, n2 := open(Config{Dir: dir})
	got, meta, ok := again.Get(key("a"))
	require.True(t, ok)
	require.Equal(t, data, got)
	require.Equal(t, "TrainStep", meta.Program)
	_, _, ok = again.Get(key("b"))
	require.False(t, ok)
	require.Equal(t, Stats{Hits: 1, Misses: 1}, again.Stats())
	require.Empty(t, append(n.all(), n2.all()...))

	entries, err := again.Entries()
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, key("a").String(), entries[0].Key)
	require.EqualValues(t, 1, entries[0].Hits)
	require.Equal(t, "cpu 0.11.2", entries[0].Meta.Plugin)
}

// A broken entry is never used: it is said in one line naming the entry and what is wrong,
// removed, and the program stored again afterwards is found.
func TestBrokenEntries(t *testing.T) {
	good := func(t *testing.T, dir string) []byte {
		c, _ := open(Config{Dir: dir})
		c.Put(key("a"), Meta{Program: "a"}, program("program a", 3000))
		raw, err := os.ReadFile(filepath.Join(dir, key("a").String()+entryExt))
		require.NoError(t, err)
		return raw
	}
	for _, tc := range []struct {
		name, reason string
		mangle       func(t *testing.T, dir string, raw []byte) []byte
	}{
		{"zero-length", "is empty (zero bytes)", func(*testing.T, string, []byte) []byte { return nil }},
		{"truncated", "is truncated", func(_ *testing.T, _ string, raw []byte) []byte { return raw[:len(raw)/2] }},
		{"truncated header", "is truncated", func(_ *testing.T, _ string, raw []byte) []byte { return raw[:20] }},
		{"corrupt", "is corrupt (its checksum does not match)", func(_ *testing.T, _ string, raw []byte) []byte {
			raw[len(raw)/2] ^= 0x40
			return raw
		}},
		{"not an entry", "is not a compile cache entry", func(_ *testing.T, _ string, raw []byte) []byte {
			return bytes.Repeat([]byte{0x5a}, len(raw))
		}},
		{"another program's", "is another program's", func(t *testing.T, dir string, _ []byte) []byte {
			other, _ := open(Config{Dir: dir})
			other.Put(key("b"), Meta{Program: "b"}, program("program b", 3000))
			raw, err := os.ReadFile(filepath.Join(dir, key("b").String()+entryExt))
			require.NoError(t, err)
			return raw // b's whole, valid entry, under a's name
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, key("a").String()+entryExt)
			require.NoError(t, os.WriteFile(path, tc.mangle(t, dir, good(t, dir)), 0o600))
			c, n := open(Config{Dir: dir})
			data, _, ok := c.Get(key("a"))
			require.False(t, ok)
			require.Nil(t, data)
			require.Equal(t, []string{"compile cache: entry " + path + " " + tc.reason}, trimAfter(n.all(), tc.reason))
			require.Contains(t, n.all()[0], "compiling the program again")
			require.NoFileExists(t, path, "removed, so that the program compiled again replaces it")
			require.Equal(t, Stats{Misses: 1, Broken: 1}, c.Stats())
			c.Put(key("a"), Meta{}, program("program a", 3000))
			data, _, ok = c.Get(key("a"))
			require.True(t, ok)
			require.Equal(t, program("program a", 3000), data)
			require.Len(t, n.all(), 1, "one line")
		})
	}
}

// trimAfter cuts each line after the first occurrence of s.
func trimAfter(lines []string, s string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		if at := strings.Index(l, s); at >= 0 {
			l = l[:at+len(s)]
		}
		out[i] = l
	}
	return out
}

// A shared folder is read after the user's own; what is compiled goes to the user's own, where
// the shared entries' hits are counted too.
func TestSharedLayer(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "shared")
	warm, _ := open(Config{Dir: shared})
	warm.Put(key("a"), Meta{Program: "a"}, program("shared a", 2000))
	require.NoError(t, os.Chmod(shared, 0o755))

	own := filepath.Join(t.TempDir(), "own")
	c, n := open(Config{Dir: own, Shared: []string{shared}})
	data, _, ok := c.Get(key("a"))
	require.True(t, ok)
	require.Equal(t, program("shared a", 2000), data)
	c.Put(key("b"), Meta{Program: "b"}, program("own b", 2000))
	require.FileExists(t, filepath.Join(own, key("b").String()+entryExt))
	require.NoFileExists(t, filepath.Join(shared, key("b").String()+entryExt))
	entries, err := c.Entries()
	require.NoError(t, err)
	require.Len(t, entries, 2)
	require.Equal(t, []bool{false, true}, []bool{entries[0].Shared, entries[1].Shared})
	require.EqualValues(t, 1, entries[1].Hits)
	require.Empty(t, n.all())

	n2, size, err := c.Clear()
	require.NoError(t, err)
	require.Equal(t, 1, n2, "only the user's own entries")
	require.Positive(t, size)
	_, _, ok = c.Get(key("a"))
	require.True(t, ok, "the shared folder is never cleared")
}

// A shared folder says how many of its entries were compiled for a machine; the shared folders
// are said to be another machine's only when they hold programs and none for this one.
func TestSharedFits(t *testing.T) {
	fill := func(metas ...Meta) string {
		dir := filepath.Join(t.TempDir(), "shared")
		c, _ := open(Config{Dir: dir})
		for i, m := range metas {
			c.Put(key(fmt.Sprint(dir, i)), m, program("p", 100))
		}
		require.NoError(t, os.Chmod(dir, 0o755))
		return dir
	}
	here, other := Meta{MachineID: "here", Machine: "CPU Here"}, Meta{MachineID: "there", Machine: "CPU There, no GPU"}
	foreign, mixed, old, empty := fill(other, other), fill(other, here), fill(Meta{Program: "old"}), fill()

	c, _ := open(Config{Shared: []string{foreign, mixed, old, empty}})
	require.Equal(t, []SharedFit{
		{Dir: foreign, Programs: 2, Others: []string{"CPU There, no GPU"}},
		{Dir: mixed, Programs: 2, ForMachine: 1, Others: []string{"CPU There, no GPU"}},
		{Dir: old, Programs: 1, Unknown: 1},
		{Dir: empty},
	}, c.SharedFits("here"))

	for _, tc := range []struct {
		shared []string
		says   string
	}{
		{[]string{foreign}, "compile cache: the shared folder " + foreign + " ($CIFARLAB_COMPILE_CACHE_SHARED) holds 2 programs compiled on " +
			"another machine (CPU There, no GPU), none for this one (CPU Here): they do not load here, so programs compile as without it. " +
			"Compile them on this machine: cifarlab cache warm --into DIR --notebook NOTEBOOK, then share DIR"},
		{[]string{foreign, empty, foreign}, "the shared folders " + foreign + ", " + foreign + " ($CIFARLAB_COMPILE_CACHE_SHARED) hold 4 programs"},
		{[]string{foreign, mixed}, ""},
		{[]string{old, foreign}, ""},
		{[]string{empty}, ""},
		{nil, ""},
	} {
		c, _ := open(Config{Shared: tc.shared})
		line := ForeignShared(c.SharedFits("here"), "CPU Here")
		if tc.says == "" {
			require.Empty(t, line, tc.shared)
		} else {
			require.Contains(t, line, tc.says)
		}
	}
}

// A folder that other users can write is refused, own or shared, with the setting that shares
// compiled programs read-only; so is an entry file that other users can write.
func TestFoldersWritableByOthersRefused(t *testing.T) {
	open777 := func(t *testing.T) string {
		d := filepath.Join(t.TempDir(), "c")
		require.NoError(t, os.Mkdir(d, 0o700))
		require.NoError(t, os.Chmod(d, 0o777))
		return d
	}
	own := open777(t)
	c, n := open(Config{Dir: own})
	require.Empty(t, c.Dir())
	require.Len(t, n.all(), 1)
	require.Contains(t, n.all()[0], own+" ($CIFARLAB_COMPILE_CACHE) is writable by other users (mode 0777)")
	require.Contains(t, n.all()[0], "$CIFARLAB_COMPILE_CACHE_SHARED")
	c.Put(key("a"), Meta{}, []byte("x"))
	require.NoFileExists(t, filepath.Join(own, key("a").String()+entryExt))

	shared := open777(t)
	c, n = open(Config{Shared: []string{shared}})
	require.Empty(t, c.Shared())
	require.Contains(t, strings.Join(n.all(), "\n"), shared+" ($CIFARLAB_COMPILE_CACHE_SHARED) is writable by other users")

	// An entry writable by others, in a shared folder that is not.
	shared = filepath.Join(t.TempDir(), "s")
	w, _ := open(Config{Dir: shared})
	w.Put(key("a"), Meta{}, program("a", 100))
	require.NoError(t, os.Chmod(shared, 0o755))
	require.NoError(t, os.Chmod(filepath.Join(shared, key("a").String()+entryExt), 0o666))
	c, n = open(Config{Shared: []string{shared}})
	_, _, ok := c.Get(key("a"))
	require.False(t, ok)
	require.Contains(t, strings.Join(n.all(), "\n"), "not a regular file that only its owner can write")

	if os.Geteuid() != 0 {
		t.Skip("another user's folder: needs root to chown")
	}
	other := filepath.Join(t.TempDir(), "other")
	require.NoError(t, os.Mkdir(other, 0o700))
	require.NoError(t, os.Chown(other, 65534, 65534))
	c, n = open(Config{Dir: other})
	require.Empty(t, c.Dir())
	require.Contains(t, strings.Join(n.all(), "\n"), "is another user's (uid 65534)")
}

// A missing shared folder, or an own folder that cannot be created, is said once; the cache
// goes on without it.
func TestMissingFolders(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	c, n := open(Config{Dir: filepath.Join(file, "cache"), Shared: []string{"/nonexistent/shared"}})
	require.Empty(t, c.Dir())
	require.Empty(t, c.Shared())
	c.Put(key("a"), Meta{}, []byte("x"))
	_, _, ok := c.Get(key("a"))
	require.False(t, ok)
	got := strings.Join(n.all(), "\n")
	require.Len(t, n.all(), 2, got)
	require.Contains(t, got, "compile cache: "+filepath.Join(file, "cache")+" ($CIFARLAB_COMPILE_CACHE) cannot be used: not a directory: compiled programs are not kept")
	require.Contains(t, got, "compile cache: /nonexistent/shared ($CIFARLAB_COMPILE_CACHE_SHARED) cannot be used: no such file or directory")
}

// mount mounts a file system for a test (root only), unmounted at its end.
func mount(t *testing.T, args ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a file system")
	}
	dir := t.TempDir()
	out, err := exec.Command("mount", append(args, dir)...).CombinedOutput()
	require.NoError(t, err, "mount: %s", out)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// A full folder: the entry that does not fit is not kept (no partial entry is left), it is said
// once, and the run goes on; what was there is still read.
func TestFullFolder(t *testing.T) {
	dir := mount(t, "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs")
	c, n := open(Config{Dir: dir})
	c.Put(key("small"), Meta{}, program("small", 1000))
	c.Put(key("big"), Meta{}, program("big", 200_000))
	c.Put(key("big2"), Meta{}, program("big", 200_000))
	require.Equal(t, []string{"compile cache: " + dir + " is full: compiled programs are no longer kept by this process " +
		"(free space there, lower $CIFARLAB_COMPILE_CACHE_MAX, or run `cifarlab cache clear`)"}, n.all())
	files, _ := os.ReadDir(dir)
	require.Len(t, files, 1, "only the small entry: no temporary file left")
	_, _, ok := c.Get(key("small"))
	require.True(t, ok)
	_, _, ok = c.Get(key("big"))
	require.False(t, ok)
}

// A read-only folder is read, not written; that is said once.
func TestReadOnlyFolder(t *testing.T) {
	dir := mount(t, "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs")
	c, _ := open(Config{Dir: dir})
	c.Put(key("a"), Meta{}, program("a", 1000))
	out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	c, n := open(Config{Dir: dir})
	_, _, ok := c.Get(key("a"))
	require.True(t, ok)
	c.Put(key("b"), Meta{}, program("b", 1000))
	c.Put(key("c"), Meta{}, program("c", 1000))
	require.Equal(t, []string{"compile cache: " + dir + " is read-only: compiled programs are no longer kept by this process " +
		"(set $CIFARLAB_COMPILE_CACHE to a folder of yours, or to off)"}, n.all())
}

// The folder stays under its bound: the entries used longest ago go first, the one just
// stored and the ones used lately stay.
func TestLRUEviction(t *testing.T) {
	dir := t.TempDir()
	c, n := open(Config{Dir: dir, MaxBytes: 10_000})
	base := time.Now().Add(-time.Hour)
	for i, k := range []string{"a", "b", "c", "d"} {
		c.Put(key(k), Meta{}, program(k, 2000))
		at := base.Add(time.Duration(i) * time.Minute)
		require.NoError(t, os.Chtimes(filepath.Join(dir, key(k).String()+entryExt), at, at))
	}
	_, _, ok := c.Get(key("a")) // a is used now: b is the least recently used
	require.True(t, ok)
	c.Put(key("e"), Meta{}, program("e", 2000)) // 5 x ~2.1 KB > 10 KB: down to 9 KB
	var kept []string
	entries, err := c.Entries()
	require.NoError(t, err)
	for _, e := range entries {
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			if e.Key == key(k).String() {
				kept = append(kept, k)
			}
		}
	}
	require.ElementsMatch(t, []string{"a", "d", "e", "c"}, kept, "b, used longest ago, went")
	require.Empty(t, n.all())
}

// Processes storing the same program at once all succeed, and a reader meanwhile sees either
// no entry or the whole one, never a part (entries are renamed into place).
func TestConcurrentProcesses(t *testing.T) {
	if dir := os.Getenv("COMPILECACHE_TEST_WRITER"); dir != "" {
		c, _ := open(Config{Dir: dir})
		for range 20 {
			c.Put(key("same"), Meta{Program: "same"}, program("same program", 2<<20))
		}
		return
	}
	dir := t.TempDir()
	var writers []*exec.Cmd
	for range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentProcesses$")
		cmd.Env = append(os.Environ(), "COMPILECACHE_TEST_WRITER="+dir)
		require.NoError(t, cmd.Start())
		writers = append(writers, cmd)
	}
	want := program("same program", 2<<20)
	reads, hits := 0, 0
	done := make(chan error, len(writers))
	for _, w := range writers {
		go func() { done <- w.Wait() }()
	}
	finished := 0
	for finished < len(writers) {
		select {
		case err := <-done:
			require.NoError(t, err)
			finished++
		default:
			c, n := open(Config{Dir: dir})
			data, _, ok := c.Get(key("same"))
			reads++
			if ok {
				hits++
				require.True(t, bytes.Equal(want, data), "a partial or wrong entry")
			}
			require.Empty(t, n.all(), "read %d", reads)
		}
	}
	c, _ := open(Config{Dir: dir})
	_, _, ok := c.Get(key("same"))
	require.True(t, ok)
	files, _ := filepath.Glob(filepath.Join(dir, ".*"))
	require.Empty(t, files, "no temporary file left")
	t.Logf("%d reads while 3 processes wrote, %d found the whole entry", reads, hits)
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"4GiB": 4 << 30, "500MB": 500e6, "64M": 64 << 20, "2.5G": 5 << 29, "1234": 1234, " 1 KiB ": 1024} {
		got, err := ParseSize(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "0", "-1G", "lots", "1TB"} {
		_, err := ParseSize(bad)
		require.Error(t, err, bad)
	}
	require.Equal(t, "1.5 GiB", FormatSize(3<<29))
	require.Equal(t, fmt.Sprint("12 B"), FormatSize(12))
}

// The settings: the default folder beside the CUDA compile cache, "off", shared folders, a bound.
func TestConfigFromEnv(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/home/u/.cache")
	t.Setenv(DirEnv, "")
	t.Setenv(SharedEnv, "/srv/a:/srv/b")
	t.Setenv(MaxEnv, "1GiB")
	cfg, off, err := ConfigFromEnv()
	require.NoError(t, err)
	require.False(t, off)
	require.Equal(t, Config{Dir: "/home/u/.cache/cifarlab/xla-programs", Shared: []string{"/srv/a", "/srv/b"}, MaxBytes: 1 << 30}, cfg)

	t.Setenv(DirEnv, "off")
	t.Setenv(SharedEnv, "")
	cfg, off, err = ConfigFromEnv()
	require.NoError(t, err)
	require.True(t, off)
	require.Empty(t, cfg.Dir)

	t.Setenv(MaxEnv, "plenty")
	_, _, err = ConfigFromEnv()
	require.ErrorContains(t, err, `$CIFARLAB_COMPILE_CACHE_MAX="plenty": not a size`)
}
