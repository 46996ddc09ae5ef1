// Package oomkill tells a process killed because memory ran out from one killed otherwise. The
// kernel's out-of-memory killer ends its victim with SIGKILL, as `kill -9` does, and Go says
// only "signal: killed"; but it counts every kill in the victim's memory cgroup (cgroup v2:
// memory.events "oom_kill"; v1: memory.oom_control "oom_kill"), next to the limit that was hit
// (memory.max; memory.limit_in_bytes). A container's limit (`docker run --memory`, JupyterHub's
// per-user memory) is such a cgroup.
//
// Take the counts before a process runs (Take), and when it ends ask Check: it answers with the
// limit when a count grew in between and the process ended by SIGKILL (or how it ended is not
// known, as for a process that is not a child).
package oomkill

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Snapshot is the out-of-memory kill counts of this process's memory cgroups: its own and each
// ancestor that its mount of the cgroup file system shows, innermost first.
type Snapshot struct {
	groups []group
}

type group struct {
	dir   string
	kills int64
}

// Take reads the counts now. Without a readable memory cgroup (not Linux, no cgroup file system
// mounted) the snapshot is empty, and Check finds nothing.
func Take() Snapshot {
	dirs := Dirs()
	s := Snapshot{groups: make([]group, 0, len(dirs))}
	for _, d := range dirs {
		if n, ok := kills(d); ok {
			s.groups = append(s.groups, group{dir: d, kills: n})
		}
	}
	return s
}

// Known reports whether the snapshot read any count: without one, Check cannot tell an
// out-of-memory kill from another.
func (s Snapshot) Known() bool { return len(s.groups) > 0 }

// MarshalText writes the snapshot as lines "COUNT FOLDER", to keep it in a file.
func (s Snapshot) MarshalText() ([]byte, error) {
	var b bytes.Buffer
	for _, g := range s.groups {
		fmt.Fprintf(&b, "%d %s\n", g.kills, g.dir)
	}
	return b.Bytes(), nil
}

// UnmarshalText reads what MarshalText wrote.
func (s *Snapshot) UnmarshalText(text []byte) error {
	s.groups = nil
	for line := range strings.Lines(string(text)) {
		count, dir, ok := strings.Cut(strings.TrimSpace(line), " ")
		n, err := strconv.ParseInt(count, 10, 64)
		if !ok || err != nil || dir == "" {
			return fmt.Errorf("oomkill: a snapshot line is not \"COUNT FOLDER\": %q", line)
		}
		s.groups = append(s.groups, group{dir: dir, kills: n})
	}
	return nil
}

// Advice is what to do when memory ran out, in the user's words (Kill.Advice fits it to the limit).
const Advice = "use less memory (a smaller batch size or model; fewer programs at once: each notebook's kernel holds its own, " +
	"so shut down those you are not using), or ask for a larger limit (docker run --memory; JupyterHub: the organiser's CIFARLAB_HUB_MEM)"

// Kill is what Check found: memory ran out in a cgroup.
type Kill struct {
	// Cgroup is the memory cgroup's folder whose count grew (the innermost one).
	Cgroup string
	// Kills is how many processes the out-of-memory killer ended there since the snapshot.
	Kills int64
	// Limit is the smallest memory limit from that cgroup up, in bytes; 0 when none is set
	// (the machine's memory ran out).
	Limit int64
}

// LimitText is the limit in the user's words: "3.0 GiB", or "the machine's memory" when no
// cgroup sets one.
func (k *Kill) LimitText() string {
	if k.Limit <= 0 {
		return "the machine's memory"
	}
	return FormatBytes(k.Limit)
}

// Advice is what to do: Advice, or where no cgroup limits memory, a machine with more.
func (k *Kill) Advice() string {
	if k.Limit <= 0 {
		return strings.Replace(Advice, "ask for a larger limit (docker run --memory; JupyterHub: the organiser's CIFARLAB_HUB_MEM)",
			"run it where there is more memory", 1)
	}
	return Advice
}

// String says what happened and where, in one phrase: "memory ran out (limit 3.0 GiB, memory
// cgroup /sys/fs/cgroup/memory: 1 out-of-memory kill)".
func (k *Kill) String() string {
	plural := ""
	if k.Kills != 1 {
		plural = "s"
	}
	limit := "no limit set: the machine's memory"
	if k.Limit > 0 {
		limit = "limit " + FormatBytes(k.Limit)
	}
	return fmt.Sprintf("memory ran out (%s, memory cgroup %s: %d out-of-memory kill%s)", limit, k.Cgroup, k.Kills, plural)
}

// FormatBytes writes n bytes in GiB (MiB below 1 GiB) with one decimal.
func FormatBytes(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}

// Check says whether a process that ended with err (what exec.Cmd.Wait returned; nil when how
// it ended is not known, as for a process that is not this one's child) was ended by the
// out-of-memory killer: it was killed by SIGKILL (or its end is unknown) and one of this
// process's memory cgroups counted an out-of-memory kill since before. Otherwise it returns
// nil: an exit, another signal, or a SIGKILL that no cgroup counted (`kill -9`, a timeout).
func Check(before Snapshot, err error) *Kill {
	if err != nil && !KilledBySIGKILL(err) {
		return nil
	}
	return grew(before, Take())
}

// KilledBySIGKILL reports whether err (from exec.Cmd.Wait or Run) says the process was ended by
// SIGKILL.
func KilledBySIGKILL(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// grew returns the innermost cgroup of now whose count is above before's, or nil.
func grew(before, now Snapshot) *Kill {
	was := map[string]int64{}
	for _, g := range before.groups {
		was[g.dir] = g.kills
	}
	for i, g := range now.groups {
		prev, seen := was[g.dir]
		if !seen || g.kills <= prev {
			continue
		}
		k := &Kill{Cgroup: g.dir, Kills: g.kills - prev}
		for _, up := range now.groups[i:] {
			if l := limit(up.dir); l > 0 && (k.Limit == 0 || l < k.Limit) {
				k.Limit = l
			}
		}
		return k
	}
	return nil
}

// Limit is the smallest memory limit of this process's memory cgroups in bytes (0: none set).
func Limit() int64 {
	var least int64
	for _, d := range Dirs() {
		if l := limit(d); l > 0 && (least == 0 || l < least) {
			least = l
		}
	}
	return least
}

// Dirs returns the folders of this process's memory cgroups, innermost first, as far up as
// the mounted cgroup file system shows them (inside a container: the container's own, whose
// limit is the container's).
func Dirs() []string {
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	cgroups, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	dir, top := memoryDir(mountinfo, cgroups)
	if dir == "" {
		return nil
	}
	if _, err := os.Stat(dir); err != nil {
		dir = top // the path is the host's, outside this mount (a container without a cgroup namespace)
	}
	var dirs []string
	for d := dir; ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == top || !strings.HasPrefix(d, top+"/") {
			return dirs
		}
	}
}

// memoryDir finds this process's memory cgroup folder and the mount point it lies under, from
// /proc/self/mountinfo and /proc/self/cgroup: cgroup v1's memory hierarchy when mounted (a
// hybrid machine counts memory there), else the unified (v2) one.
func memoryDir(mountinfo, cgroups []byte) (dir, top string) {
	var v1Root, v1Mount, v2Root, v2Mount string
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+3 >= len(fields) {
			continue
		}
		root, mount, fstype, super := unescape(fields[3]), unescape(fields[4]), fields[sep+1], fields[sep+3]
		switch {
		case fstype == "cgroup" && hasOption(super, "memory") && v1Mount == "":
			v1Root, v1Mount = root, mount
		case fstype == "cgroup2" && v2Mount == "":
			v2Root, v2Mount = root, mount
		}
	}
	var v1Path, v2Path string
	hasV2Path := false
	for line := range strings.Lines(string(cgroups)) {
		// HIERARCHY-ID:CONTROLLERS:PATH (v2: 0::PATH)
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path, hasV2Path = parts[2], true
		} else if hasOption(parts[1], "memory") {
			v1Path = parts[2]
		}
	}
	switch {
	case v1Mount != "" && v1Path != "":
		return join(v1Mount, v1Root, v1Path), v1Mount
	case v2Mount != "" && hasV2Path:
		return join(v2Mount, v2Root, v2Path), v2Mount
	}
	return "", ""
}

// join is the folder of cgroup path under a mount of the hierarchy whose root is root; a path
// outside that root (the host's path, seen from a container) is the mount's root itself.
func join(mount, root, path string) string {
	if root == "/" {
		return filepath.Join(mount, path)
	}
	if rel, ok := strings.CutPrefix(path, root); ok && (rel == "" || strings.HasPrefix(rel, "/")) {
		return filepath.Join(mount, rel)
	}
	return mount
}

func hasOption(list, name string) bool {
	for o := range strings.SplitSeq(list, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// kills reads a cgroup folder's out-of-memory kill count (v2 memory.events, v1 memory.oom_control).
func kills(dir string) (int64, bool) {
	for _, name := range []string{"memory.events", "memory.oom_control"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "oom_kill "); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					return n, true
				}
			}
		}
	}
	return 0, false
}

// noLimit is where cgroup v1 writes "no limit" (a page-rounded max int64); anything above it is none.
const noLimit = 1 << 60

// limit reads a cgroup folder's memory limit in bytes (v2 memory.max, v1 memory.limit_in_bytes);
// 0 when none is set or readable.
func limit(dir string) int64 {
	for _, name := range []string{"memory.max", "memory.limit_in_bytes"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= noLimit {
			return 0 // "max", or v1's no-limit value
		}
		return n
	}
	return 0
}
