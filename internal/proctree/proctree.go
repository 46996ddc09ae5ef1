// Package proctree holds what the lab does with processes, in one place: it finds and ends the
// processes of one kernel on Linux, by what /proc says of them (their parent, the process tree,
// and an environment variable they inherited: a marker that survives setsid, new process groups
// and re-parenting to init, which the tree does not), and it starts the lab's children with an
// owner and an end (children.go: a process group that dies with its parent, a session of its
// own, stopping a group, a supervisor's exit status, the exit status of an interrupted run).
// The kernel supervisor (cmd/cifarlab-kernel), the lab's Jupyter server (kernel), the lab
// process (cifarlib/internal/labproc), a local sweep's tasks (cifarlib/sweep), the CLI and the
// notebooks' cells use it.
package proctree

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// GuardEnv is the variable that marks a kernel's processes: the kernel supervisor
// (cmd/cifarlab-kernel) sets it to a value of its own, everything the kernel starts inherits it,
// and the supervisor's guard ends every process that carries it when the kernel ends. A process
// that must outlive the kernel (a Slurm job submitted from a cell) is started without it
// (WithoutGuard).
const GuardEnv = "CIFARLAB_KERNEL_GUARD"

// WithoutGuard returns env (os.Environ() when nil) without GuardEnv, for a process that is not
// the kernel's to end.
func WithoutGuard(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, GuardEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// Proc is one process as /proc shows it.
type Proc struct {
	Pid, PPid int
	// Comm is the command name (/proc/PID/comm).
	Comm string
	// Start is the start time in clock ticks since boot: with Pid it names a process even
	// after its pid is reused.
	Start uint64
}

// ErrNoProc is returned when /proc cannot be read (not Linux, or /proc not mounted).
var ErrNoProc = errors.New("proctree: /proc is not readable")

// List returns every process /proc shows.
func List() ([]Proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoProc, err)
	}
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := Stat(pid); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// Stat reads one process's /proc/PID/stat.
func Stat(pid int) (Proc, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}, err
	}
	// pid (comm) state ppid ... ; comm may hold spaces and parentheses: cut at the last ')'.
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return Proc{}, fmt.Errorf("proctree: /proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(data[end+1:]))
	// fields[0] is the state, [1] ppid, [19] starttime (field 22 of stat).
	if len(fields) < 20 {
		return Proc{}, fmt.Errorf("proctree: /proc/%d/stat: %d fields", pid, len(fields))
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return Proc{}, err
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return Proc{}, err
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return Proc{}, fmt.Errorf("proctree: process %d has exited", pid)
	}
	return Proc{Pid: pid, PPid: ppid, Comm: string(data[open+1 : end]), Start: start}, nil
}

// Alive reports whether p still runs (same pid, same start time, not a zombie).
func (p Proc) Alive() bool {
	q, err := Stat(p.Pid)
	return err == nil && q.Start == p.Start
}

func (p Proc) String() string { return fmt.Sprintf("%s (pid %d)", p.Comm, p.Pid) }

// HasEnv reports whether the process's environment holds the exact entry kv ("NAME=value").
// Processes of other users, whose environment is not readable, never match.
func HasEnv(pid int, kv string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for e := range bytes.SplitSeq(data, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// Find returns the processes whose environment holds kv, and every descendant of those or of
// the roots (a child that cleared its environment is still found through its parent), except
// the calling process. procs is a List result.
func Find(procs []Proc, kv string, roots ...int) []Proc {
	self := os.Getpid()
	in := map[int]bool{}
	for _, r := range roots {
		in[r] = true
	}
	for _, p := range procs {
		if kv != "" && HasEnv(p.Pid, kv) {
			in[p.Pid] = true
		}
	}
	children := map[int][]Proc{}
	byPid := map[int]Proc{}
	for _, p := range procs {
		children[p.PPid] = append(children[p.PPid], p)
		byPid[p.Pid] = p
	}
	var out []Proc
	seen := map[int]bool{}
	var walk func(pid int)
	walk = func(pid int) {
		if seen[pid] {
			return
		}
		seen[pid] = true
		if p, ok := byPid[pid]; ok && pid != self {
			out = append(out, p)
		}
		for _, c := range children[pid] {
			walk(c.Pid)
		}
	}
	for pid := range in {
		walk(pid)
	}
	return out
}

// End sends SIGTERM to each process, waits up to grace for them to exit, then sends SIGKILL
// to those left and waits for them to go (up to 5 s more). It returns the processes still
// alive after that (none, unless one is stuck in the kernel or belongs to another user).
func End(procs []Proc, grace time.Duration) []Proc {
	signal := func(sig syscall.Signal) {
		for _, p := range procs {
			if p.Alive() {
				_ = syscall.Kill(p.Pid, sig)
			}
		}
	}
	alive := func() []Proc {
		var out []Proc
		for _, p := range procs {
			if p.Alive() {
				out = append(out, p)
			}
		}
		return out
	}
	wait := func(d time.Duration) []Proc {
		deadline := time.Now().Add(d)
		for {
			left := alive()
			if len(left) == 0 || time.Now().After(deadline) {
				return left
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	signal(syscall.SIGTERM)
	if left := wait(grace); len(left) == 0 {
		return nil
	}
	signal(syscall.SIGKILL)
	return wait(5 * time.Second)
}
