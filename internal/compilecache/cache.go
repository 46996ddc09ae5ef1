package compilecache

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cifarlab/cifarlab/internal/atomicfile"
)

// entryExt and hitsExt are the extensions of an entry's file and of its hit count (one byte per
// hit, appended; the writable folder holds it, also for an entry of a shared folder).
const (
	entryExt = ".xla"
	hitsExt  = ".hits"
	maxHits  = 1 << 20
)

// Cache is a persistent store of compiled programs, by Key: the user's own folder, writable,
// over read-only shared folders (Config). It never fails its caller: a folder it cannot use,
// an entry it cannot read or write, is said in one line (once per folder and kind of problem,
// each broken entry once) and the program is compiled as without a cache. Entries are written
// atomically (a temporary file, then a rename), so that any number of processes can share a
// folder: a reader sees a whole entry or none, and each entry is checked (its checksum, and the
// key it was stored under) before it is used.
type Cache struct {
	dir      string // the writable folder; "" when there is none or it cannot be used
	shared   []string
	maxBytes int64
	note     func(line string)

	said     sync.Map // the problems said, by kind
	readOnly atomic.Bool
	evictMu  sync.Mutex
	stats    struct{ hits, misses, stores, broken atomic.Int64 }
}

// Open opens the cache of cfg, saying its problems to note (nil: standard error). A folder
// writable by other users is refused (a program someone else put there would run in this
// process); the user's own folder is created when missing (mode 0700) and must be theirs.
func Open(cfg Config, note func(line string)) *Cache {
	if note == nil {
		note = func(line string) { fmt.Fprintln(os.Stderr, "cifarlab: "+line) }
	}
	c := &Cache{maxBytes: cfg.MaxBytes, note: note}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxBytes
	}
	if cfg.Dir != "" {
		if err := prepareOwn(cfg.Dir); err != nil {
			c.sayOnce("own", err.Error()+": compiled programs are not kept")
		} else {
			c.dir = cfg.Dir
		}
	}
	for _, s := range cfg.Shared {
		if err := checkFolder(s, SharedEnv, false); err != nil {
			c.sayOnce("shared "+s, err.Error())
			continue
		}
		c.shared = append(c.shared, s)
	}
	return c
}

// Dir is the user's writable folder in use ("" when there is none, or it was refused).
func (c *Cache) Dir() string { return c.dir }

// Shared are the shared, read-only folders in use (those refused are left out).
func (c *Cache) Shared() []string { return c.shared }

// prepareOwn creates dir when missing (mode 0700) and checks that it can be the user's own.
func prepareOwn(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("compile cache: cannot create %s ($%s): %w", dir, DirEnv, unwrapPath(err))
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("compile cache: %s ($%s): %w", dir, DirEnv, unwrapPath(err))
		}
	}
	return checkFolder(dir, DirEnv, true)
}

// checkFolder says why dir (the folder of setting) cannot be used: missing, not a folder,
// writable by other users than its owner, or, for the user's own folder (own), another user's.
func checkFolder(dir, setting string, own bool) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("compile cache: %s ($%s) cannot be used: %w", dir, setting, unwrapPath(err))
	}
	if !fi.IsDir() {
		return fmt.Errorf("compile cache: %s ($%s) is not a folder", dir, setting)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm()&0o022 != 0 || (own && st != nil && int(st.Uid) != os.Geteuid()) {
		who := fmt.Sprintf("writable by other users (mode %04o)", fi.Mode().Perm())
		if fi.Mode().Perm()&0o022 == 0 {
			who = fmt.Sprintf("another user's (uid %d)", st.Uid)
		}
		return fmt.Errorf("compile cache: %s ($%s) is %s: a program someone else put there would run in "+
			"this process, so it is not used. Make it yours alone (chmod 700 %s), and share compiled programs "+
			"read-only with $%s: a folder that only its owner can write", dir, setting, who, dir, SharedEnv)
	}
	return nil
}

// unwrapPath drops a *fs.PathError's operation and path, which the messages say themselves.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// sayOnce says line, the first time a problem of kind is met.
func (c *Cache) sayOnce(kind, line string) {
	if _, said := c.said.LoadOrStore(kind, true); !said {
		c.note(line)
	}
}

// Get returns the data stored under key: from the user's folder, else from the first shared
// folder that has it; ok is false when none has it, or when what is there is broken (said, and
// removed from the user's folder, so that the program compiled again replaces it).
func (c *Cache) Get(key Key) (data []byte, meta Meta, ok bool) {
	for i, dir := range append([]string{c.dir}, c.shared...) {
		if dir == "" {
			continue
		}
		path := filepath.Join(dir, key.String()+entryExt)
		raw, err := readEntryFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			meta, data, err = decodeEntry(path, raw, key)
		}
		if err != nil {
			c.stats.broken.Add(1)
			c.sayOnce("entry "+path, err.Error()+": compiling the program again")
			if i == 0 {
				_ = os.Remove(path)
			}
			continue
		}
		c.stats.hits.Add(1)
		c.countHit(key)
		return data, meta, true
	}
	c.stats.misses.Add(1)
	return nil, Meta{}, false
}

// readEntryFile reads an entry's file, which must be a regular file that only its owner can
// write.
func readEntryFile(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o022 != 0 {
		return nil, &BrokenError{Path: path, Reason: fmt.Sprintf("not a regular file that only its owner can write (%s)", fi.Mode())}
	}
	return os.ReadFile(path)
}

// countHit adds one to key's hit count in the user's folder, which also marks it used now.
func (c *Cache) countHit(key Key) {
	if c.dir == "" || c.readOnly.Load() {
		return
	}
	path := filepath.Join(c.dir, key.String()+hitsExt)
	if fi, err := os.Stat(path); err == nil && fi.Size() >= maxHits {
		now := time.Now()
		_ = os.Chtimes(path, now, now)
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	_, _ = f.Write([]byte{'\n'})
	_ = f.Close()
}

// Put stores data under key in the user's folder, atomically, then evicts the programs used
// longest ago while the folder is over its bound. A folder that is full, read-only or gone is
// said once, and nothing more is written to it by this process.
func (c *Cache) Put(key Key, meta Meta, data []byte) {
	if c.dir == "" || c.readOnly.Load() {
		return
	}
	path := filepath.Join(c.dir, key.String()+entryExt)
	err := atomicfile.WriteFile(path, func(w io.Writer) error { return encodeEntry(w, key, meta, data) })
	if err != nil {
		c.readOnly.Store(true)
		c.sayOnce("write", fmt.Sprintf("compile cache: %s %s: compiled programs are no longer kept by this process%s",
			c.dir, writeProblem(err), writeFix(err)))
		return
	}
	c.stats.stores.Add(1)
	c.evict(key)
}

// writeProblem says what a failed write found, in a user's words.
func writeProblem(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "is full"
	case errors.Is(err, syscall.EROFS), errors.Is(err, fs.ErrPermission):
		return "is read-only"
	case errors.Is(err, fs.ErrNotExist):
		return "is missing"
	}
	return fmt.Sprintf("cannot be written (%v)", err)
}

// writeFix says what to do about a failed write.
func writeFix(err error) string {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Sprintf(" (free space there, lower $%s, or run `cifarlab cache clear`)", MaxEnv)
	}
	return fmt.Sprintf(" (set $%s to a folder of yours, or to off)", DirEnv)
}

// Stats counts what this process's Cache did.
type Stats struct {
	// Hits and Misses are lookups that found a usable entry or not; Stores the entries written;
	// Broken the entries found unusable (counted among the misses when no other folder had one).
	Hits, Misses, Stores, Broken int64
}

// Stats returns what c did so far.
func (c *Cache) Stats() Stats {
	return Stats{Hits: c.stats.hits.Load(), Misses: c.stats.misses.Load(), Stores: c.stats.stores.Load(), Broken: c.stats.broken.Load()}
}
