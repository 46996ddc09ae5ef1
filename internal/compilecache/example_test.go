package compilecache_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/internal/compilecache"
)

// A process stores what it compiled; the next one, opening the same folder, finds it. The key
// is the caller's digest of everything the compiled code depends on.
func Example() {
	dir, _ := os.MkdirTemp("", "compilecache-example-")
	defer os.RemoveAll(dir)
	cfg := compilecache.Config{Dir: filepath.Join(dir, "cache")}
	key := compilecache.Key(sha256.Sum256([]byte("the program, its options, the plugin, the machine")))

	first := compilecache.Open(cfg, nil)
	if _, _, ok := first.Get(key); !ok {
		first.Put(key, compilecache.Meta{Program: "TrainStep"}, []byte("a serialized executable"))
	}

	next := compilecache.Open(cfg, nil) // another process
	data, meta, ok := next.Get(key)
	fmt.Println(ok, meta.Program, string(data))
	fmt.Printf("%+v\n", next.Stats())
	// Output:
	// true TrainStep a serialized executable
	// {Hits:1 Misses:0 Stores:0 Broken:0}
}
