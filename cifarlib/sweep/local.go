package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/internal/oomkill"
)

// Local runs a sweep's tasks on this machine: P at a time, each with one GPU of its own
// (CUDA_VISIBLE_DEVICES) where there are GPUs, one at a time on a CPU.
type Local struct {
	// Binary is the cifarlab binary each task runs (`cifarlab sweep task`).
	Binary string
	// GPUs are the device ids to hand out, one per running task; nil: LocalGPUs().
	GPUs []string
	// Parallel caps the tasks running at once: at most len(GPUs), 1 without GPUs; 0: that many.
	Parallel int
	// Log, when set, gets a line as each task starts and ends.
	Log io.Writer
}

// LocalGPUs are the NVIDIA GPUs of this machine by index (/dev/nvidia0, /dev/nvidia1, ...),
// or the ones $CUDA_VISIBLE_DEVICES lists when set.
func LocalGPUs() []string {
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		var out []string
		for id := range strings.SplitSeq(v, ",") {
			if id = strings.TrimSpace(id); id != "" {
				out = append(out, id)
			}
		}
		return out
	}
	matches, _ := filepath.Glob("/dev/nvidia[0-9]*")
	var ids []int
	for _, m := range matches {
		if n, err := strconv.Atoi(filepath.Base(m)[len("nvidia"):]); err == nil {
			ids = append(ids, n)
		}
	}
	sort.Ints(ids)
	out := make([]string, len(ids))
	for i, n := range ids {
		out[i] = strconv.Itoa(n)
	}
	return out
}

// gpus is GPUs, else LocalGPUs().
func (l *Local) gpus() []string {
	if l.GPUs != nil {
		return l.GPUs
	}
	return LocalGPUs()
}

// Slots is how many tasks run at once: one per GPU (at most Parallel), one without GPUs.
func (l *Local) Slots() int {
	slots := max(1, len(l.gpus()))
	if l.Parallel > 0 {
		slots = min(slots, l.Parallel)
	}
	return slots
}

// DryRun says which tasks Submit would run here and how many at a time.
func (l *Local) DryRun(s *Sweep, tasks []int) (string, error) {
	return fmt.Sprintf("would run tasks %s here, %d at a time", ArraySpec(tasks), l.Slots()), nil
}

// Submit runs tasks of s here and waits for them; each task's output goes to logs/INDEX.out
// in the sweep's folder. The error lists the tasks that failed.
//
// Cancelling ctx (the sweep's Ctrl-C or SIGTERM) starts no more tasks and sends the running
// ones SIGINT: each saves its checkpoint at the step it reached, marks its run.json
// interrupted and exits 130, as `cifarlab train` does on Ctrl-C. Submit waits for them and
// returns *InterruptedError. The tasks run in a process group of their own, so that a
// terminal's Ctrl-C reaches them once, from the sweep (a second signal would kill them before
// they saved), and on Linux they get SIGTERM when the sweep dies.
func (l *Local) Submit(ctx context.Context, s *Sweep, tasks []int) (string, error) {
	gpus := l.gpus()
	slots := l.Slots()
	s.Submissions = append(s.Submissions, Submission{Executor: "local", Tasks: tasks, Time: time.Now().UTC()})
	if err := s.Save(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(s.logPath(0)), 0o755); err != nil {
		return "", fmt.Errorf("sweep: %w", err)
	}
	free := make(chan string, slots)
	for i := range slots {
		gpu := ""
		if i < len(gpus) {
			gpu = gpus[i]
		}
		free <- gpu
	}
	var mu sync.Mutex
	var failed []error
	stopped := &InterruptedError{Sweep: s.Name, Runs: s.runs, Saved: map[int]int{}}
	var wg sync.WaitGroup
	for n, i := range tasks {
		var gpu string
		select {
		case gpu = <-free:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			mu.Lock()
			stopped.NotStarted = append(stopped.NotStarted, tasks[n:]...)
			mu.Unlock()
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { free <- gpu }()
			step, interrupted, err := l.runTask(ctx, s, i, gpu)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case interrupted:
				stopped.Saved[i] = step
			case err == errNotStarted:
				stopped.NotStarted = append(stopped.NotStarted, i)
			case err != nil:
				failed = append(failed, err)
			}
		}()
	}
	wg.Wait()
	slices.Sort(stopped.NotStarted)
	if len(stopped.Saved) > 0 || len(stopped.NotStarted) > 0 {
		failed = append(failed, stopped)
	}
	if err := errors.Join(failed...); err != nil {
		return "", err
	}
	return fmt.Sprintf("sweep %s: %d tasks done (cifarlab runs --runs %s)", s.Name, len(tasks), s.runs), nil
}

// processStatus is the wait status of cmd's process, when it ran.
func processStatus(cmd *exec.Cmd) any {
	if cmd.ProcessState == nil {
		return nil
	}
	return cmd.ProcessState.Sys()
}

// errNotStarted is runTask's answer for a task stopped before it wrote anything.
var errNotStarted = errors.New("sweep: stopped before it started")

// exitInterrupted is the exit status of a task that saved its checkpoint on SIGINT or
// SIGTERM (that of `cifarlab train`).
const exitInterrupted = 130

// runTask runs `cifarlab sweep task --index i` with gpu as its CUDA_VISIBLE_DEVICES. A task
// that was interrupted and saved its checkpoint returns interrupted and the step it saved.
func (l *Local) runTask(ctx context.Context, s *Sweep, i int, gpu string) (step int, interrupted bool, err error) {
	out, err := os.OpenFile(s.logPath(i), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, false, fmt.Errorf("sweep: task %d: %w", i, err)
	}
	defer out.Close()
	runsDir, err := filepath.Abs(s.runs)
	if err != nil {
		return 0, false, fmt.Errorf("sweep: %w", err)
	}
	cmd := exec.CommandContext(ctx, l.Binary, "sweep", "task", "--runs", runsDir, "--name", s.Name, "--index", strconv.Itoa(i))
	cmd.SysProcAttr = taskProcAttr()
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Minute // to save the checkpoint; then it is killed
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = os.Environ()
	if gpu != "" {
		cmd.Env = append(cmd.Env, "CUDA_VISIBLE_DEVICES="+gpu)
	}
	on := "on the CPU"
	if gpu != "" {
		on = "on GPU " + gpu
	}
	name := s.Tasks[i].Name
	l.logf("task %d %s: started %s\n", i, name, on)
	start := time.Now()
	memory := oomkill.Take()
	err = cmd.Run()
	took := time.Since(start).Seconds()
	var exit *exec.ExitError
	if errors.As(err, &exit) && (exit.ExitCode() == exitInterrupted) {
		if info := runs.Read(s.RunDir(i)); info.Status == runs.RunInterrupted {
			l.logf("task %d %s: interrupted after %.1fs: checkpoint saved at step %d\n", i, name, took, info.Steps)
			return info.Steps, true, nil
		}
	}
	if ws, ok := processStatus(cmd).(syscall.WaitStatus); ok && ctx.Err() != nil && ws.Signaled() && ws.Signal() == syscall.SIGINT {
		// The sweep's SIGINT came while the task was starting, before it could catch it: it
		// wrote nothing, and stays as if not started.
		l.logf("task %d %s: stopped as it started, before it wrote anything\n", i, name)
		return 0, false, errNotStarted
	}
	if oom := oomkill.Check(memory, err); oom != nil {
		l.logf("task %d %s: killed because %s after %.1fs (log: %s); to go on, %s\n", i, name, oom, took, out.Name(), oom.Advice())
		return 0, false, fmt.Errorf("sweep: task %d %s: %w: killed because %s (its output: %s)", i, name, err, oom, out.Name())
	}
	if err != nil {
		why := err.Error()
		if e := taskError(out.Name()); e != "" {
			why += ": " + e
		}
		l.logf("task %d %s: %s after %.1fs (log: %s)\n", i, name, why, took, out.Name())
		return 0, false, fmt.Errorf("sweep: task %d %s: %w (its output: %s)", i, name, err, out.Name())
	}
	l.logf("task %d %s: done in %.1fs\n", i, name, took)
	return 0, false, nil
}

func (l *Local) logf(format string, args ...any) {
	if l.Log != nil {
		fmt.Fprintf(l.Log, format, args...)
	}
}
