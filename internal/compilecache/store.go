package compilecache

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Entry is one compiled program of a cache folder, as `cifarlab cache` lists it.
type Entry struct {
	// Key is the entry's key (its file name), Dir its folder and Shared whether that is a
	// shared, read-only one.
	Key    string
	Dir    string
	Shared bool
	// Size is the entry's size in bytes (its hit count's file included), Hits how many times a
	// process loaded it, LastUsed when it was stored or last loaded.
	Size     int64
	Hits     int64
	LastUsed time.Time
	// Meta describes it (read from the entry's header; zero when that cannot be read).
	Meta Meta
}

// Entries lists the entries of the user's folder, then of the shared folders, the most recently
// used first within each.
func (c *Cache) Entries() ([]Entry, error) {
	var all []Entry
	for i, dir := range append([]string{c.dir}, c.shared...) {
		if dir == "" {
			continue
		}
		entries, err := c.folderEntries(dir, i > 0)
		if err != nil {
			return nil, err
		}
		all = append(all, entries...)
	}
	return all, nil
}

// folderEntries lists the entries of one folder.
func (c *Cache) folderEntries(dir string, shared bool) ([]Entry, error) {
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, f := range files {
		key, ok := strings.CutSuffix(f.Name(), entryExt)
		if !ok || strings.HasPrefix(f.Name(), ".") {
			continue
		}
		info, err := f.Info()
		if err != nil {
			continue
		}
		e := Entry{Key: key, Dir: dir, Shared: shared, Size: info.Size(), LastUsed: info.ModTime(), Meta: readMeta(filepath.Join(dir, f.Name()))}
		if c.dir != "" {
			if hi, err := os.Stat(filepath.Join(c.dir, key+hitsExt)); err == nil {
				e.Hits = hi.Size()
				if !shared {
					e.Size += hi.Size()
				}
				if hi.ModTime().After(e.LastUsed) {
					e.LastUsed = hi.ModTime()
				}
			}
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastUsed.After(out[j].LastUsed) })
	return out, nil
}

// readMeta reads the description in an entry's header (zero when it cannot).
func readMeta(path string) Meta {
	f, err := os.Open(path)
	if err != nil {
		return Meta{}
	}
	defer f.Close()
	head := make([]byte, headerLen+4)
	if _, err := io.ReadFull(f, head); err != nil || string(head[:len(magic)]) != magic {
		return Meta{}
	}
	n := binary.LittleEndian.Uint32(head[headerLen:])
	if n > maxMetaLen {
		return Meta{}
	}
	raw := make([]byte, n)
	var m Meta
	if _, err := io.ReadFull(f, raw); err != nil || json.Unmarshal(raw, &m) != nil {
		return Meta{}
	}
	return m
}

// evict removes the entries of the user's folder used longest ago while it holds more than its
// bound (down to 90% of it, so that it is not done at every store), and leftover temporary files
// of writes that died; keep, just stored, goes last.
func (c *Cache) evict(keep Key) {
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	entries, err := c.folderEntries(c.dir, false)
	if err != nil {
		return
	}
	removeStaleTemps(c.dir)
	var total int64
	for _, e := range entries {
		total += e.Size
	}
	if total <= c.maxBytes {
		return
	}
	sort.SliceStable(entries, func(i, j int) bool {
		ki, kj := entries[i].Key == keep.String(), entries[j].Key == keep.String()
		if ki != kj {
			return kj
		}
		return entries[i].LastUsed.Before(entries[j].LastUsed)
	})
	for _, e := range entries {
		if total <= c.maxBytes*9/10 {
			break
		}
		if removeEntry(c.dir, e.Key) == nil {
			total -= e.Size
		}
	}
}

// removeEntry removes an entry and its hit count from dir.
func removeEntry(dir, key string) error {
	err := os.Remove(filepath.Join(dir, key+entryExt))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	_ = os.Remove(filepath.Join(dir, key+hitsExt))
	return nil
}

// removeStaleTemps removes the temporary files of writes begun more than an hour ago (their
// process died before the rename).
func removeStaleTemps(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, ".*"+entryExt+".tmp-*"))
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && time.Since(fi.ModTime()) > time.Hour {
			_ = os.Remove(f)
		}
	}
}

// Clear removes every entry of the user's folder (the shared folders are read-only), and the
// hit counts; it returns how many entries and bytes it removed.
func (c *Cache) Clear() (n int, size int64, err error) {
	if c.dir == "" {
		return 0, 0, nil
	}
	entries, err := c.folderEntries(c.dir, false)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		if err := removeEntry(c.dir, e.Key); err != nil {
			return n, size, err
		}
		n, size = n+1, size+e.Size
	}
	hits, _ := filepath.Glob(filepath.Join(c.dir, "*"+hitsExt))
	for _, h := range hits {
		_ = os.Remove(h)
	}
	removeStaleTemps(c.dir)
	return n, size, nil
}
