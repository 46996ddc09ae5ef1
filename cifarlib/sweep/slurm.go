package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cifarlab/cifarlab/internal/proctree"
)

// SignalSeconds is how long before its time limit Slurm sends a task SIGUSR1
// (--signal=B:USR1@300): time to save a checkpoint and requeue itself.
const SignalSeconds = 300

// Slurm submits a sweep's tasks as one Slurm job array.
type Slurm struct {
	// Binary is the cifarlab binary each task runs, by a path valid on the compute nodes.
	Binary string
	// Flags are the user's sbatch flags: partition, time limit, GPUs, e.g.
	// "--partition=gpu --time=4:00:00 --gres=gpu:1".
	Flags []string
	// Parallel caps the tasks running at once (--array=...%P); 0: no cap.
	Parallel int
	// Env is the environment of sbatch (nil: this process's).
	Env []string
}

// JobScript is the batch script of a sweep: it runs `cifarlab sweep task`, which finds its task
// from SLURM_ARRAY_TASK_ID. exec makes cifarlab the batch shell, so that --signal=B:USR1
// reaches it.
func (sl *Slurm) JobScript(s *Sweep) (string, error) {
	runs, err := filepath.Abs(s.runs)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("#!/bin/sh\n# cifarlab sweep %s: task $SLURM_ARRAY_TASK_ID of %s\nexec %s sweep task --runs %s --name %s\n",
		s.Name, filepath.Join(Dir(runs, s.Name), FileName), shellQuote(sl.Binary), shellQuote(runs), shellQuote(s.Name)), nil
}

// Command is the sbatch command line that submits tasks of s (the job script last).
func (sl *Slurm) Command(s *Sweep, tasks []int) []string {
	array := "--array=" + ArraySpec(tasks)
	if sl.Parallel > 0 {
		array += "%" + strconv.Itoa(sl.Parallel)
	}
	dir := Dir(s.runs, s.Name)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	args := []string{"sbatch", "--parsable", array, "--requeue", fmt.Sprintf("--signal=B:USR1@%d", SignalSeconds),
		"--job-name=" + s.Name, "--open-mode=append", "--output=" + filepath.Join(dir, "logs", "%a.out")}
	args = append(args, sl.Flags...)
	return append(args, filepath.Join(dir, "job.sh"))
}

// DryRun is the sbatch command line Submit would run and the job script it would write.
func (sl *Slurm) DryRun(s *Sweep, tasks []int) (string, error) {
	script, err := sl.JobScript(s)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s\njob script:\n%s", strings.Join(sl.Command(s, tasks), " "), strings.TrimSuffix(script, "\n")), nil
}

// Submit submits tasks of s as one job array and records it, with its job id, in sweep.json;
// it says which job array it submitted and how to follow it. sweep.json and the job script are written before sbatch runs (the tasks read them);
// when sbatch is missing or refuses, sweep.json is put back as it was and the error carries
// sbatch's message (*SlurmError).
func (sl *Slurm) Submit(ctx context.Context, s *Sweep, tasks []int) (string, error) {
	id, err := sl.submit(ctx, s, tasks)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("submitted job array %s: tasks %s of sweep %s (cifarlab sweep status --runs %s --name %s)",
		id, ArraySpec(tasks), s.Name, s.runs, s.Name), nil
}

// submit is Submit; it returns the job id.
func (sl *Slurm) submit(ctx context.Context, s *Sweep, tasks []int) (string, error) {
	if len(tasks) == 0 {
		return "", errors.New("sweep: no task to submit")
	}
	script, err := sl.JobScript(s)
	if err != nil {
		return "", err
	}
	path := filepath.Join(Dir(s.runs, s.Name), FileName)
	before, readErr := os.ReadFile(path)
	if err := s.Save(); err != nil {
		return "", err
	}
	undo := func() {
		if readErr == nil {
			_ = writeFile(path, before)
		} else {
			_ = os.Remove(path)
		}
	}
	if err := writeFile(filepath.Join(Dir(s.runs, s.Name), "job.sh"), []byte(script)); err != nil {
		undo()
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(Dir(s.runs, s.Name), "logs"), 0o755); err != nil {
		undo()
		return "", fmt.Errorf("sweep: %w", err)
	}
	argv := sl.Command(s, tasks)
	// A job outlives the notebook kernel that submitted it: it must not carry the kernel's
	// marker, or the kernel's end would end a job that Slurm runs on this machine.
	out, err := runSlurm(ctx, proctree.WithoutGuard(sl.Env), argv)
	if err != nil {
		undo()
		return "", err
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";") // --parsable: "id" or "id;cluster"
	if _, err := strconv.Atoi(id); err != nil {
		undo()
		return "", &SlurmError{Command: strings.Join(argv, " "), Message: out, Err: errors.New("no job id in its output")}
	}
	s.Submissions = append(s.Submissions, Submission{Executor: "slurm", JobID: id, Tasks: tasks, Command: argv, Flags: sl.Flags, Time: time.Now().UTC()})
	return id, s.Save()
}

// RequeueSelf asks Slurm to requeue the job of this process (`scontrol requeue`), the array
// task ($SLURM_ARRAY_JOB_ID_$SLURM_ARRAY_TASK_ID) or else the job ($SLURM_JOB_ID): what a task
// does on SIGUSR1 after saving its checkpoint. Outside Slurm it returns an error.
func RequeueSelf(ctx context.Context) error {
	id := os.Getenv("SLURM_JOB_ID")
	if a, t := os.Getenv("SLURM_ARRAY_JOB_ID"), os.Getenv("SLURM_ARRAY_TASK_ID"); a != "" && t != "" {
		id = a + "_" + t
	}
	if id == "" {
		return errors.New("sweep: not a Slurm job (no SLURM_JOB_ID): nothing to requeue")
	}
	_, err := runSlurm(ctx, nil, []string{"scontrol", "requeue", id})
	return err
}

// runSlurm runs a Slurm command and returns its standard output; a missing command or a
// failure gives *SlurmError with what it printed.
func runSlurm(ctx context.Context, env []string, argv []string) (string, error) {
	if _, err := exec.LookPath(argv[0]); err != nil {
		return "", &SlurmError{Command: argv[0], Err: err,
			Message: "Slurm's commands are not on PATH: run on a login node of the cluster, or use --local to run the tasks here"}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", &SlurmError{Command: strings.Join(argv, " "), Message: strings.TrimSpace(stderr.String() + stdout.String()), Err: err}
	}
	return stdout.String(), nil
}

// ArraySpec writes task indices as sbatch's --array list: ranges and single indices, e.g.
// "0-3" or "1,4-6".
func ArraySpec(tasks []int) string {
	var parts []string
	for i := 0; i < len(tasks); {
		j := i
		for j+1 < len(tasks) && tasks[j+1] == tasks[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", tasks[i], tasks[j]))
		} else {
			parts = append(parts, strconv.Itoa(tasks[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// parseArraySpec reads an --array list as squeue writes it for pending tasks ("2-3%4",
// "[1,4-6]"); the step ":N" and the cap "%P" are understood.
func parseArraySpec(s string) []int {
	s = strings.Trim(s, "[]")
	s, _, _ = strings.Cut(s, "%")
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		rng, stepS, _ := strings.Cut(part, ":")
		step := 1
		if n, err := strconv.Atoi(stepS); err == nil && n > 0 {
			step = n
		}
		lo, hi, isRange := strings.Cut(rng, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for i := a; i <= b; i += step {
			out = append(out, i)
		}
	}
	return out
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
