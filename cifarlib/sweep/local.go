package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
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

// Run runs tasks of s and waits for them; each task's output goes to logs/INDEX.out in the
// sweep's folder. Cancelling ctx sends the running tasks SIGTERM (they save their checkpoint
// and exit). The error lists the tasks that failed.
func (l *Local) Run(ctx context.Context, s *Sweep, tasks []int) error {
	gpus := l.gpus()
	slots := l.Slots()
	s.Submissions = append(s.Submissions, Submission{Executor: "local", Tasks: tasks, Time: time.Now().UTC()})
	if err := s.Save(); err != nil {
		return err
	}
	logs := filepath.Join(Dir(s.runs, s.Name), "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return fmt.Errorf("sweep: %w", err)
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
	var wg sync.WaitGroup
	for _, i := range tasks {
		var gpu string
		select {
		case gpu = <-free:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { free <- gpu }()
			if err := l.runTask(ctx, s, i, gpu, logs); err != nil {
				mu.Lock()
				failed = append(failed, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		failed = append(failed, fmt.Errorf("sweep %s: stopped (%w): run the same sweep again to resume the unfinished tasks", s.Name, err))
	}
	return errors.Join(failed...)
}

// runTask runs `cifarlab sweep task --index i` with gpu as its CUDA_VISIBLE_DEVICES.
func (l *Local) runTask(ctx context.Context, s *Sweep, i int, gpu, logs string) error {
	out, err := os.OpenFile(filepath.Join(logs, strconv.Itoa(i)+".out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("sweep: task %d: %w", i, err)
	}
	defer out.Close()
	runs, err := filepath.Abs(s.runs)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, l.Binary, "sweep", "task", "--runs", runs, "--name", s.Name, "--index", strconv.Itoa(i))
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Minute
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = os.Environ()
	if gpu != "" {
		cmd.Env = append(cmd.Env, "CUDA_VISIBLE_DEVICES="+gpu)
	}
	on := "on the CPU"
	if gpu != "" {
		on = "on GPU " + gpu
	}
	l.logf("task %d %s: started %s\n", i, s.Tasks[i].Name, on)
	start := time.Now()
	err = cmd.Run()
	if err != nil {
		l.logf("task %d %s: %v after %.1fs (log: %s)\n", i, s.Tasks[i].Name, err, time.Since(start).Seconds(), out.Name())
		return fmt.Errorf("sweep: task %d %s: %w (its output: %s)", i, s.Tasks[i].Name, err, out.Name())
	}
	l.logf("task %d %s: done in %.1fs\n", i, s.Tasks[i].Name, time.Since(start).Seconds())
	return nil
}

func (l *Local) logf(format string, args ...any) {
	if l.Log != nil {
		fmt.Fprintf(l.Log, format, args...)
	}
}
