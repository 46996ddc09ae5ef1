package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/sweep"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

func init() {
	register(command{
		name: "sweep",
		summary: "train a grid of runs: one Slurm job array (--slurm) or here, a few at a time (--local); " +
			"sweep status, sweep resubmit",
		run: runSweep,
	})
}

// sweepSynopsis is the usage line of "cifarlab sweep".
const sweepSynopsis = "[--runs DIR] [--name NAME] --grid FLAG=V1,V2 [--grid ...] [--list 'FLAG=V ...'] " +
	"[--slurm \"SBATCH FLAGS\" | --local] [--parallel P] [--dry-run] TRAIN FLAGS...\n" +
	"       cifarlab sweep status [--runs DIR] [--name NAME] [--json]\n" +
	"       cifarlab sweep resubmit [--runs DIR] [--name NAME] [--slurm \"SBATCH FLAGS\" | --local] [--parallel P] [--dry-run]"

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// sweepFlags are the flags of "cifarlab sweep" and its sub-commands.
type sweepFlags struct {
	runs, name, slurm, binary string
	grid, list                multiFlag
	local, dryRun, asJSON     bool
	parallel                  int
}

// newSweepFlags is the flag set of "cifarlab sweep" (sub is "", "status" or "resubmit").
func newSweepFlags(sub string, stdout io.Writer) (*flag.FlagSet, *sweepFlags) {
	fs := newFlagSet("sweep", sweepSynopsis, stdout)
	var f sweepFlags
	fs.StringVar(&f.runs, "runs", "", "the runs `DIR`, on a filesystem every node mounts (default: $"+runs.DirEnv+", else runs/ of the data folder)")
	fs.StringVar(&f.name, "name", "sweep", "the sweep's `NAME`: its run folders are NAME-FLAG_VALUE-...")
	if sub == "status" {
		fs.BoolVar(&f.asJSON, "json", false, "print the status as JSON")
		return fs, &f
	}
	if sub == "" {
		fs.Var(&f.grid, "grid", "a train flag and its values, `FLAG=V1,V2,...`; several --grid are crossed")
		fs.Var(&f.list, "list", "one more task with these train flags, `'FLAG=V FLAG=V'`")
	}
	fs.StringVar(&f.slurm, "slurm", "", "submit one Slurm job array with these sbatch `FLAGS` (partition, time, GPUs; split at spaces, no quoting), "+
		"e.g. \"--partition=gpu --time=4:00:00 --gres=gpu:1\"")
	fs.BoolVar(&f.local, "local", false, "run the tasks here (the default without --slurm): one per GPU at a time, one at a time on a CPU")
	fs.IntVar(&f.parallel, "parallel", 0, "at most `P` tasks at once (Slurm: --array=...%P; 0: no cap, or the GPUs here)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the tasks and the sbatch command, submit nothing")
	fs.StringVar(&f.binary, "binary", "", "the cifarlab `PATH` the tasks run, valid on the compute nodes (default: this cifarlab)")
	return fs, &f
}

func runSweep(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "status":
			return sweepStatus(args[1:], stdout)
		case "resubmit":
			return sweepSubmit("resubmit", args[1:], stdout)
		case "task":
			return sweepTask(args[1:], stdout)
		}
	}
	return sweepSubmit("", args, stdout)
}

// sweepSubmit plans a sweep (sub "") or reloads one (sub "resubmit") and runs or submits its
// unfinished tasks.
func sweepSubmit(sub string, args []string, stdout io.Writer) error {
	fs, f := newSweepFlags(sub, stdout)
	sweepArgs, trainArgs, err := splitSweepArgs(args, fs)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := fs.Parse(sweepArgs); err != nil {
		return err
	}
	if f.local && f.slurm != "" {
		return &exitError{code: 2, err: errors.New("--local and --slurm: choose one executor")}
	}
	runsDir := f.runsDir()
	s, err := f.load(sub, runsDir, trainArgs)
	if err != nil {
		return err
	}
	binary, err := f.binaryPath()
	if err != nil {
		return err
	}
	ex := f.executor(binary, stdout)
	// The first SIGINT (Ctrl-C) or SIGTERM stops the sweep as it stops `cifarlab train`: a local
	// sweep's running tasks save their checkpoints; a second one kills the sweep.
	ctx, stop := training.InterruptContext(context.Background())
	defer stop()
	tasks, err := s.ToRun(ctx, nil)
	if err != nil {
		return err
	}
	for _, t := range s.Tasks {
		fmt.Fprintf(stdout, "task %d  %s  %s\n", t.Index, t.Name, strings.Join(taskArgs(s, t, trainArgs), " "))
	}
	if len(tasks) == 0 {
		if n := len(s.Unfinished()); n > 0 {
			fmt.Fprintf(stdout, "the %d unfinished tasks of sweep %s are in Slurm's queue (cifarlab sweep status --runs %s --name %s)\n", n, s.Name, runsDir, s.Name)
			return nil
		}
		fmt.Fprintf(stdout, "all %d tasks of sweep %s are done (cifarlab runs --runs %s)\n", len(s.Tasks), s.Name, runsDir)
		return nil
	}
	var said string
	if f.dryRun {
		said, err = ex.DryRun(s, tasks)
	} else {
		said, err = ex.Submit(ctx, s, tasks)
	}
	if errors.Is(err, training.ErrInterrupted) {
		return &exitError{code: exitInterrupted, err: err}
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, said)
	return nil
}

// load reloads the sweep of runsDir (sub "resubmit", which takes no train flags) or plans a new
// one with trainArgs.
func (f *sweepFlags) load(sub, runsDir string, trainArgs []string) (*sweep.Sweep, error) {
	if sub != "resubmit" {
		s, err := planSweep(f, runsDir, trainArgs)
		if err != nil {
			return nil, &exitError{code: 2, err: err}
		}
		return s, nil
	}
	if len(trainArgs) > 0 {
		return nil, &exitError{code: 2, err: fmt.Errorf("sweep resubmit takes no train flags (%q): it reruns the sweep as planned", trainArgs)}
	}
	return sweep.Load(runsDir, f.name)
}

// executor is the executor the flags choose: Slurm with --slurm, else Local.
func (f *sweepFlags) executor(binary string, log io.Writer) sweep.Executor {
	if f.slurm != "" {
		return &sweep.Slurm{Binary: binary, Flags: strings.Fields(f.slurm), Parallel: f.parallel}
	}
	return &sweep.Local{Binary: binary, Parallel: f.parallel, Log: log}
}

// runsDir is --runs, else the default runs folder.
func (f *sweepFlags) runsDir() string {
	if f.runs != "" {
		return f.runs
	}
	return runs.DefaultDir(data.DefaultDir())
}

// binaryPath is --binary, else this executable.
func (f *sweepFlags) binaryPath() (string, error) {
	if f.binary != "" {
		return f.binary, nil
	}
	return os.Executable()
}

// planSweep plans the sweep of the flags f: its grid and list, and the train flags trainArgs
// as settings every task shares, on training's defaults; a --data folder that holds no data is
// refused for every task.
func planSweep(f *sweepFlags, runsDir string, trainArgs []string) (*sweep.Sweep, error) {
	fs, tf := newTrainFlags(io.Discard)
	if err := fs.Parse(trainArgs); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, &sweep.GridError{Arg: "the shared flags", Problem: fmt.Sprintf("hold %q, which is not a flag", fs.Args()),
			Fix: "write train's flags as --flag value"}
	}
	var err error
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "json" || fl.Name == "progress" {
			err = &sweep.GridError{Arg: "the shared flags", Problem: "sets --" + fl.Name + ", which the sweep sets for each task",
				Fix: "leave --" + fl.Name + " out: each task trains into its own folder of --runs"}
		}
	})
	if err != nil {
		return nil, err
	}
	spec := sweep.Spec{Name: f.name, Runs: runsDir, Base: training.Defaults()}
	for _, name := range tf.order {
		spec.Shared = append(spec.Shared, sweep.Setting{Field: name, Value: tf.set[name]})
	}
	for _, g := range f.grid {
		a, err := sweep.ParseAxis(g)
		if err != nil {
			return nil, err
		}
		spec.Grid = append(spec.Grid, a)
	}
	for _, l := range f.list {
		st, err := sweep.ParseList(l)
		if err != nil {
			return nil, err
		}
		spec.List = append(spec.List, st)
	}
	s, err := sweep.Plan(spec)
	if err != nil {
		return nil, err
	}
	if _, dataSet := tf.set["data"]; dataSet {
		for i, t := range s.Tasks {
			ts, _ := s.TaskSettings(i) // Plan checked them
			if err := checkDataDir(ts.Data.Dir, ts.Data.Spec); err != nil {
				return nil, &sweep.GridError{Arg: "task " + t.Name, Problem: "is refused by `cifarlab train`", Err: err, Fix: "fix the flags"}
			}
		}
	}
	return s, nil
}

// taskArgs are task t's train flags in words, for the task lines: the shared ones as given
// (trainArgs; those of a loaded sweep, its shared settings), then its own, and its run folder.
func taskArgs(s *sweep.Sweep, t sweep.Task, trainArgs []string) []string {
	args := slices.Clone(trainArgs)
	if args == nil {
		for _, st := range s.Shared {
			args = append(args, "--"+st.Field, st.Value)
		}
	}
	for _, st := range t.Settings {
		args = append(args, "--"+st.Field+"="+st.Value)
	}
	return append(args, "--checkpoint", s.RunDir(t.Index), "--progress", "off")
}

// checkDataDir refuses a --data folder that holds spec's data in neither layout, nor synthetic
// data in its synthetic/ folder (where training also looks).
func checkDataDir(dir string, spec data.Spec) error {
	var looked []string
	for _, root := range []string{dir, data.SyntheticDir(dir)} {
		for _, layout := range []data.Layout{data.LayoutBinary, data.LayoutPython} {
			sp := spec.InLayout(layout)
			first := filepath.Join(root, sp.Dir, sp.TrainFiles[0])
			if fi, err := os.Stat(first); err == nil && fi.Mode().IsRegular() {
				return nil
			}
			looked = append(looked, first)
		}
	}
	return fmt.Errorf("--data %s holds no %s data (looked for %s): give --data the folder that holds %s/ or %s/, "+
		"or get the data with `cifarlab download --dataset %s --data %s`", dir, spec.Name, strings.Join(looked, ", "),
		spec.InLayout(data.LayoutBinary).Dir, spec.InLayout(data.LayoutPython).Dir, spec.Name, dir)
}

// splitSweepArgs separates the flags of the sweep (those fs defines) from the train flags,
// which may be mixed: "--grid seed=1,2 --model cnn --steps 100". After "--" all are train's.
func splitSweepArgs(args []string, fs *flag.FlagSet) (sweepArgs, trainArgs []string, err error) {
	train, _ := newTrainFlags(io.Discard)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return sweepArgs, append(trainArgs, args[i+1:]...), nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return nil, nil, fmt.Errorf("unexpected argument %q: flags are written --flag value", a)
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "h" || name == "help" {
			return []string{a}, nil, nil // the sweep's usage
		}
		dst, fl := &trainArgs, train.Lookup(name)
		if sf := fs.Lookup(name); sf != nil {
			dst, fl = &sweepArgs, sf
		}
		if fl == nil {
			return nil, nil, fmt.Errorf("unknown flag --%s: not a flag of `cifarlab sweep` or of `cifarlab train` (see cifarlab sweep -h, cifarlab train -h)", name)
		}
		*dst = append(*dst, a)
		if fl == nil || hasValue {
			continue
		}
		if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			i++
			*dst = append(*dst, args[i])
		}
	}
	return sweepArgs, trainArgs, nil
}

// sweepStatus prints the status of a sweep's tasks: the run folders joined with squeue.
func sweepStatus(args []string, stdout io.Writer) error {
	fs, f := newSweepFlags("status", stdout)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	s, err := sweep.Load(f.runsDir(), f.name)
	if err != nil {
		return err
	}
	sts, qerr := s.Status(context.Background(), nil)
	if qerr != nil {
		fmt.Fprintf(os.Stderr, "note: the Slurm queue could not be read, the states come from the run folders alone: %v\n", qerr)
	}
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(sts)
	}
	return sweep.WriteStatus(stdout, sts)
}

// sweepTask runs one task of a sweep: what the job script runs on a node, with the task's
// index from --index or $SLURM_ARRAY_TASK_ID. A task whose run is done exits at once; else it
// trains into its run folder, resuming from its last checkpoint. SIGUSR1 (the time limit is
// near) saves the checkpoint and requeues the task; SIGTERM or SIGINT saves it and exits.
func sweepTask(args []string, stdout io.Writer) error {
	fs := newFlagSet("sweep task", "--runs DIR --name NAME [--index I]", stdout)
	runsDir := fs.String("runs", "", "the sweep's runs `DIR`")
	name := fs.String("name", "sweep", "the sweep's `NAME`")
	index := fs.String("index", os.Getenv("SLURM_ARRAY_TASK_ID"), "the task's `INDEX` (default: $SLURM_ARRAY_TASK_ID)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	i, err := strconv.Atoi(*index)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("--index %q: give the task's index (a Slurm job array sets SLURM_ARRAY_TASK_ID)", *index)}
	}
	s, err := sweep.Load(*runsDir, *name)
	if err != nil {
		return err
	}
	t, err := s.Task(i)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if rec, err := runs.ReadRecord(s.RunDir(i)); err == nil && rec.Status == runs.RunDone {
		fmt.Fprintf(stdout, "task %d %s: done already (%s)\n", i, t.Name, s.RunDir(i))
		return nil
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	// SIGINT and SIGTERM are caught from here on, not only once training has started, so that a
	// sweep stopped while its task starts up gets an interrupted task, not a killed one.
	ctx, stop := training.InterruptContext(context.Background())
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var requeue atomic.Bool
	go func() {
		select {
		case <-usr1:
			requeue.Store(true)
			cancel()
		case <-ctx.Done():
		}
	}()
	settings, err := s.TaskSettings(i)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	// A batch job has no terminal: no progress bar, the log on stderr (the task's log file).
	err = trainSettings(ctx, settings, training.Env{Log: os.Stderr, Progress: training.ProgressOff}, false, stdout)
	if requeue.Load() {
		fmt.Fprintf(stdout, "task %d %s: SIGUSR1 (the time limit is near): checkpoint saved, requeueing\n", i, t.Name)
		if rerr := sweep.RequeueSelf(context.Background()); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	return taskInterrupted(err, s, i, requeue.Load())
}

// taskInterrupted turns the "run the same command to resume" of an interrupted task i into
// what resumes a sweep's task: Slurm's requeue, `sweep resubmit`, or the local sweep run
// again. Other errors pass unchanged.
func taskInterrupted(err error, s *sweep.Sweep, i int, requeued bool) error {
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitInterrupted {
		return err
	}
	dir := s.RunDir(i)
	info := runs.Read(dir)
	if info.Status != runs.RunInterrupted {
		return err // nothing saved: the message says so
	}
	resume := "the sweep resumes it when run again (the same `cifarlab sweep` command)"
	switch {
	case requeued:
		resume = "requeued: Slurm starts it again from there"
	case os.Getenv("SLURM_JOB_ID") != "":
		resume = "resume it with `" + s.Resubmit() + "`"
	}
	return &exitError{code: exitInterrupted, err: fmt.Errorf("task %d %s: interrupted at step %d; checkpoint saved in %s: %s",
		i, s.Tasks[i].Name, info.Steps, dir, resume)}
}
