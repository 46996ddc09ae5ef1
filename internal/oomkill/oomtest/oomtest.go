// Package oomtest gives tests a memory cgroup of their own with a small limit, in which a
// process really runs out of memory (the kernel's out-of-memory killer, not a simulation).
package oomtest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/internal/oomkill"
)

// Cgroup creates a memory cgroup under this process's own, limited to limit bytes (and no
// swap), removed when the test ends. It skips the test where none can be made: not root on
// cgroup v1, or a cgroup v2 without the memory controller delegated.
func Cgroup(t *testing.T, limit int64) string {
	t.Helper()
	dirs := oomkill.Dirs()
	if len(dirs) == 0 {
		t.Skip("no memory cgroup readable here")
	}
	dir := filepath.Join(dirs[0], "oomtest-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot create a memory cgroup under %s (not root, or not delegated): %v", dirs[0], err)
	}
	t.Cleanup(func() {
		for end := time.Now().Add(10 * time.Second); os.Remove(dir) != nil && time.Now().Before(end); {
			time.Sleep(50 * time.Millisecond) // its processes are still being reaped
		}
	})
	wrote := false
	for _, name := range []string{"memory.max", "memory.limit_in_bytes"} {
		if os.WriteFile(filepath.Join(dir, name), []byte(strconv.FormatInt(limit, 10)), 0o644) == nil {
			wrote = true
			break
		}
	}
	if !wrote {
		t.Skipf("cannot set a memory limit on %s (cgroup v2 without the memory controller delegated)", dir)
	}
	// No swap (v2 swap.max, v1 memsw) where the machine has some: the process must run out.
	_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0o644)
	return dir
}

// Enter moves this process into the cgroup dir; its children start there.
func Enter(dir string) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644)
}

// Visit moves this process into the cgroup dir for the rest of the test, whose processes started
// meanwhile stay there (a kernel and everything it starts, as in a container of that limit), and
// back to the cgroup it was in when the test ends.
func Visit(t *testing.T, dir string) {
	t.Helper()
	home := oomkill.Dirs()
	if len(home) == 0 {
		t.Skip("no memory cgroup readable here")
	}
	if err := Enter(dir); err != nil {
		t.Skipf("cannot enter the memory cgroup %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := Enter(home[0]); err != nil {
			t.Errorf("oomtest: back to the memory cgroup %s: %v", home[0], err)
		}
	})
}

// Allocate touches n bytes in chunks of 16 MiB and keeps them (a process that runs out of
// memory inside a Cgroup), then returns how many chunks it holds.
func Allocate(n int64) int {
	var chunks [][]byte
	for done := int64(0); done < n; done += 16 << 20 {
		b := make([]byte, 16<<20)
		for j := range b {
			b[j] = byte(j)
		}
		chunks = append(chunks, b)
	}
	return len(chunks)
}
