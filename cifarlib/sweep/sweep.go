package sweep

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/internal/atomicfile"
)

// FileName is the sweep's record, in its folder of the runs folder (Dir).
const FileName = "sweep.json"

// Spec is what a sweep is asked to run.
type Spec struct {
	// Name names the sweep; its tasks' run folders are named after it (Task.Name).
	Name string
	// Runs is the runs folder, a shared filesystem on a cluster: each task trains into its own
	// sub-folder, and the sweep's record goes into Runs/.sweeps/Name (Dir).
	Runs string
	// Grid is crossed: every combination of its axes' values is a task. List adds tasks with
	// their own settings. At least one of them must give a task.
	Grid []Axis
	List [][]Setting
	// Shared are the train flags every task gets (e.g. --model resnet20 --steps 2000).
	Shared []string
	// Flags returns a new flag set of the train command: the sweep checks every task's command
	// line with it (unknown flags, bad values) before anything is submitted.
	Flags func() *flag.FlagSet
	// Check, when set, checks a task's train flags further (e.g. a missing --steps).
	Check func(args []string) error
}

// Task is one run of a sweep: `cifarlab train` with the shared flags and its settings, into
// its own run folder.
type Task struct {
	// Index is the task's position: its SLURM_ARRAY_TASK_ID in the job array.
	Index int `json:"index"`
	// Name is its run folder's name in the runs folder: the sweep's name and its settings,
	// e.g. "lr-sweep-seed_1-lr_0.1".
	Name string `json:"name"`
	// Settings are the task's own flags (from the grid or the list).
	Settings []Setting `json:"settings"`
	// Args are its train flags: the shared ones, then its settings; the sweep adds
	// --checkpoint with the run folder.
	Args []string `json:"args"`
	// Params are the flags Args set, by name (run.json's params).
	Params map[string]string `json:"params"`
}

// Submission is one submission of some of a sweep's tasks.
type Submission struct {
	// Executor is "slurm" or "local".
	Executor string `json:"executor"`
	// JobID is the Slurm job array's id ("" for local).
	JobID string `json:"job_id,omitempty"`
	// Tasks are the indices submitted; Command the sbatch command line, Flags the user's
	// sbatch flags in it (--slurm).
	Tasks   []int     `json:"tasks"`
	Command []string  `json:"command,omitempty"`
	Flags   []string  `json:"flags,omitempty"`
	Time    time.Time `json:"time"`
}

// Resubmit is the command that submits the sweep's unfinished tasks again with the executor
// and sbatch flags of its last submission.
func (s *Sweep) Resubmit() string {
	cmd := "cifarlab sweep resubmit --runs " + s.runs + " --name " + s.Name
	if n := len(s.Submissions); n > 0 && s.Submissions[n-1].Executor == "slurm" {
		return cmd + ` --slurm "` + strings.Join(s.Submissions[n-1].Flags, " ") + `"`
	}
	return cmd + " --local"
}

// Sweep is the content of sweep.json: the grid, the tasks and their submissions.
type Sweep struct {
	Name   string      `json:"name"`
	Grid   []Axis      `json:"grid,omitempty"`
	List   [][]Setting `json:"list,omitempty"`
	Shared []string    `json:"shared"`
	Tasks  []Task      `json:"tasks"`
	// Submissions are the job arrays (or local runs) that ran the tasks, oldest first.
	Submissions []Submission `json:"submissions,omitempty"`
	Created     time.Time    `json:"created"`

	runs string
}

// nameRE is what a sweep's name may be: it starts every run folder's name.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Dir is the folder of a sweep's record, job script and task logs: .sweeps/name in the runs
// folder (hidden, so that the runs table lists the runs only).
func Dir(runsDir, name string) string { return filepath.Join(runsDir, ".sweeps", name) }

// Runs is the runs folder the sweep was planned or loaded for.
func (s *Sweep) Runs() string { return s.runs }

// RunDir is the run folder of task i.
func (s *Sweep) RunDir(i int) string { return filepath.Join(s.runs, s.Tasks[i].Name) }

// Plan checks spec and returns the sweep with its tasks, without writing anything but a probe
// of the runs folder: an unknown flag, a bad value, an empty grid, a runs folder that cannot
// be written, a name already used with another grid (*NameUsedError) and a run folder of the
// same name trained with other settings (*SettingsError) are errors.
func Plan(spec Spec) (*Sweep, error) {
	if !nameRE.MatchString(spec.Name) {
		return nil, &GridError{Arg: "--name " + spec.Name, Problem: "is not a sweep name",
			Fix: "start with a letter or digit and use letters, digits and . _ - only"}
	}
	if len(spec.Grid) == 0 && len(spec.List) == 0 {
		return nil, &GridError{Arg: "the sweep", Problem: "has no grid and no list, so no task",
			Fix: "give at least one --grid FLAG=V1,V2 (or --list 'FLAG=V ...')"}
	}
	s := &Sweep{Name: spec.Name, Grid: spec.Grid, List: spec.List, Shared: slices.Clone(spec.Shared), Created: time.Now().UTC(), runs: spec.Runs}
	if err := s.plan(spec); err != nil {
		return nil, err
	}
	if err := probeWritable(spec.Runs); err != nil {
		return nil, err
	}
	if old, err := Load(spec.Runs, spec.Name); err == nil {
		if !s.sameAs(old) {
			return nil, &NameUsedError{Name: spec.Name, Runs: spec.Runs, Old: old.describe(), New: s.describe()}
		}
		s.Submissions, s.Created = old.Submissions, old.Created
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for i := range s.Tasks {
		if err := s.checkRunFolder(i); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// plan expands the grid and checks every task's command line with the train flags.
func (s *Sweep) plan(spec Spec) error {
	fs := spec.Flags()
	for _, a := range spec.Grid {
		if err := checkFlags(fs, "--grid "+a.Flag, a.Flag); err != nil {
			return err
		}
		if len(a.Values) == 0 {
			return &GridError{Arg: "--grid " + a.Flag, Problem: "has no values", Fix: "give at least one value"}
		}
	}
	for _, l := range spec.List {
		for _, st := range l {
			if err := checkFlags(fs, "--list "+st.Flag, st.Flag); err != nil {
				return err
			}
		}
	}
	seen := map[string]int{}
	for i, settings := range combinations(spec.Grid, spec.List) {
		t := Task{Index: i, Name: spec.Name, Settings: settings, Args: slices.Clone(spec.Shared)}
		for _, st := range settings {
			t.Name += "-" + st.Flag + "_" + st.Value
			t.Args = append(t.Args, "--"+st.Flag+"="+st.Value)
		}
		if j, dup := seen[t.Name]; dup {
			return &GridError{Arg: "task " + t.Name, Problem: fmt.Sprintf("is task %d too", j), Fix: "list each combination once"}
		}
		seen[t.Name] = i
		fs := spec.Flags()
		fs.SetOutput(io.Discard)
		if err := fs.Parse(t.Args); err != nil {
			return &GridError{Arg: "task " + t.Name, Problem: "is refused by `" + fs.Name() + "`: " + err.Error(), Fix: "fix the flag's value"}
		}
		if fs.NArg() > 0 {
			return &GridError{Arg: "the shared flags", Problem: fmt.Sprintf("hold %q, which is not a flag", fs.Args()),
				Fix: "write train's flags as --flag value"}
		}
		if err := checkReservedShared(fs); err != nil {
			return err
		}
		if spec.Check != nil {
			if err := spec.Check(t.Args); err != nil {
				return &GridError{Arg: "task " + t.Name, Problem: "is refused by `" + fs.Name() + "`: " + err.Error(), Fix: "fix the flags"}
			}
		}
		t.Params = FlagParams(fs)
		s.Tasks = append(s.Tasks, t)
	}
	return nil
}

// checkReservedShared refuses a shared flag the sweep sets itself.
func checkReservedShared(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err == nil && slices.Contains(Reserved, f.Name) {
			err = checkFlags(fs, "the shared flags", f.Name)
		}
	})
	return err
}

// checkRunFolder refuses a run folder of task i that holds a run with other settings.
func (s *Sweep) checkRunFolder(i int) error {
	dir := s.RunDir(i)
	rec, err := runs.ReadRecord(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	t := s.Tasks[i]
	if err != nil {
		return &SettingsError{Dir: dir, Task: t.Name, Problem: err.Error()}
	}
	if !maps.Equal(rec.Params, t.Params) {
		return &SettingsError{Dir: dir, Task: t.Name, Problem: fmt.Sprintf("it holds a run trained with %s, the task has %s",
			formatParams(rec.Params), formatParams(t.Params))}
	}
	return nil
}

// sameAs is true when s and old have the same grid, list and shared flags.
func (s *Sweep) sameAs(old *Sweep) bool { return s.describe() == old.describe() }

// describe is the sweep's grid, list and shared flags in words.
func (s *Sweep) describe() string {
	var parts []string
	for _, a := range s.Grid {
		parts = append(parts, "--grid "+a.Flag+"="+strings.Join(a.Values, ","))
	}
	for _, l := range s.List {
		var kv []string
		for _, st := range l {
			kv = append(kv, st.Flag+"="+st.Value)
		}
		parts = append(parts, "--list '"+strings.Join(kv, " ")+"'")
	}
	return strings.Join(append(parts, s.Shared...), " ")
}

// formatParams writes params as sorted --flag=value pairs.
func formatParams(p map[string]string) string {
	if len(p) == 0 {
		return "no recorded flags"
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		out = append(out, "--"+k+"="+p[k])
	}
	return strings.Join(out, " ")
}

// Load reads the record of the sweep name from the runs folder. A sweep never saved gives an
// error that wraps os.ErrNotExist.
func Load(runsDir, name string) (*Sweep, error) {
	path := filepath.Join(Dir(runsDir, name), FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("sweep: no sweep %q in %s (%w): start it with `cifarlab sweep --runs %s --name %s --grid ...`",
				name, runsDir, err, runsDir, name)
		}
		return nil, fmt.Errorf("sweep: reading the sweep: %w", err)
	}
	s := &Sweep{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("sweep: %s: %w: the file is not a cifarlab sweep record", path, err)
	}
	s.runs = runsDir
	return s, nil
}

// Save writes sweep.json atomically (a temporary file, then rename).
func (s *Sweep) Save() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("sweep: encoding the sweep: %w", err)
	}
	return writeFile(filepath.Join(Dir(s.runs, s.Name), FileName), append(data, '\n'))
}

// Task returns the task of index i, or an error that says which indices exist.
func (s *Sweep) Task(i int) (Task, error) {
	if i < 0 || i >= len(s.Tasks) {
		return Task{}, fmt.Errorf("sweep %s: no task %d: it has tasks 0 to %d", s.Name, i, len(s.Tasks)-1)
	}
	return s.Tasks[i], nil
}

// TrainArgs are the train flags of task i: its Args, --checkpoint with its run folder and
// --progress off (a batch job has no terminal).
func (s *Sweep) TrainArgs(i int) []string {
	return append(slices.Clone(s.Tasks[i].Args), "--checkpoint", s.RunDir(i), "--progress", "off")
}

// Unfinished are the indices of the tasks whose run.json does not say done.
func (s *Sweep) Unfinished() []int {
	var out []int
	for i := range s.Tasks {
		if rec, err := runs.ReadRecord(s.RunDir(i)); err != nil || rec.Status != runs.RunDone {
			out = append(out, i)
		}
	}
	return out
}

// probeWritable creates the runs folder when missing and checks that a file can be written
// in it, so that a read-only or missing shared folder fails before anything is submitted.
func probeWritable(runsDir string) error {
	fix := "give --runs a folder you can write, on a filesystem every node mounts"
	if runsDir == "" {
		return &RunsFolderError{Dir: runsDir, Err: errors.New("no runs folder given"), Fix: fix}
	}
	if err := os.MkdirAll(runsDir, 0o755); err != nil {
		return &RunsFolderError{Dir: runsDir, Err: err, Fix: fix}
	}
	f, err := os.CreateTemp(runsDir, ".sweep-probe-*")
	if err != nil {
		return &RunsFolderError{Dir: runsDir, Err: err, Fix: fix}
	}
	f.Close()
	return os.Remove(f.Name())
}

// writeFile writes data to path atomically (internal/atomicfile: a temporary file, then rename),
// creating its folder.
func writeFile(path string, data []byte) error {
	return atomicfile.WriteFile(path, func(w io.Writer) error { _, err := w.Write(data); return err })
}
