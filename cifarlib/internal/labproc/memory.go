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

// cellMemoryPath keeps the counts as the kernel's last cell found them (CellMemory).
func cellMemoryPath(folder string) string { return filepath.Join(folder, "cell-oom-kills") }

// CellMemory is called as a cell of the kernel whose lab process folder is folder begins: it
// returns what the memory cgroup counted since the kernel's previous cell began (nil when
// nothing, or at the kernel's first cell), and keeps the counts for the next cell. A cell's own
// program killed because memory ran out cannot say so; GoNB says only "signal: killed", and the
// next cell tells why. An out-of-memory kill that a lab process request already reported is
// not told again.
func CellMemory(folder string) *oomkill.Kill {
	path := cellMemoryPath(folder)
	b, err := os.ReadFile(path)
	now := oomkill.Take()
	if text, merr := now.MarshalText(); merr == nil {
		_ = os.WriteFile(path, text, 0o600)
	}
	var before oomkill.Snapshot
	if err != nil || before.UnmarshalText(b) != nil || !before.Known() {
		return nil
	}
	return oomkill.Check(before, nil)
}

// cellMemoryTold keeps the counts now as told: the next cell does not repeat what a request's
// error has just said.
func cellMemoryTold(folder string) {
	if b, err := oomkill.Take().MarshalText(); err == nil {
		_ = os.WriteFile(cellMemoryPath(folder), b, 0o600)
	}
}
