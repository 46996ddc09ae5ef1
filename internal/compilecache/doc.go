// Package compilecache keeps compiled XLA programs across processes: a folder of entries, each
// one program's serialized executable under a Key that the caller derives from everything the
// compiled code depends on (cifarlib/backends: the program's bytes, its compile options, the
// devices, the plugin, the machine). The user's own folder is writable, bounded in size with
// least-recently-used eviction, over read-only shared folders (a workshop's, filled once).
//
// Every entry is checked before use (its checksum, and the key stored inside it), written
// atomically, and read only from folders that no other user can write. Whatever goes wrong
// (a broken entry, a full, read-only or missing folder) is said in one line, and the caller
// compiles as without a cache: the cache never fails a run.
//
// It is internal plumbing (stage 1, see internal/layers): it knows files, not XLA.
package compilecache
