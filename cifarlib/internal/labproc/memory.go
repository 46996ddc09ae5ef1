package labproc

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cifarlab/cifarlab/internal/oomkill"
)

// How a lab process found dead ended, as far as the memory cgroup tells (internal/oomkill): the
// kernel's out-of-memory killer ends it with SIGKILL, as `kill -9` does.

// memoryPath keeps the memory cgroup's out-of-memory kill counts as the client last saw them
// with a lab process alive (markMemory).
func memoryPath(folder string) string { return filepath.Join(folder, "oom-kills") }

// markMemory keeps the counts now in folder: the next client that finds the lab process dead
// tells from them whether memory ran out.
func markMemory(folder string) {
	if b, err := oomkill.Take().MarshalText(); err == nil {
		_ = os.WriteFile(memoryPath(folder), b, 0o600)
	}
}

// markedMemory is what markMemory kept (an empty snapshot when nothing is).
func markedMemory(folder string) oomkill.Snapshot {
	var s oomkill.Snapshot
	if b, err := os.ReadFile(memoryPath(folder)); err == nil {
		_ = s.UnmarshalText(b)
	}
	return s
}

// endedHow says how process pid, which ended by itself, ended ("was killed because memory ran
// out (limit ...)", "ended (killed or crashed, ...)"): memory ran out (the cgroup counted
// an out-of-memory kill since before), or not, or unknown (no memory cgroup to read). It waits
// a moment for pid to be gone, so that the count includes its kill.
func endedHow(before oomkill.Snapshot, pid int, log string) (oom *oomkill.Kill, how string) {
	waitGone(pid, 2*time.Second)
	switch oom = oomkill.Check(before, nil); {
	case oom != nil:
		return oom, "was killed because " + oom.String()
	case before.Known():
		return nil, fmt.Sprintf("ended (killed or crashed, not out of memory: see %s)", log)
	}
	return nil, fmt.Sprintf("ended (killed, or out of memory: see %s)", log)
}
