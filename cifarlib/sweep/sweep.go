package sweep

import (
	"encoding/json"
	"errors"
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
	"github.com/cifarlab/cifarlab/cifarlib/training"
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
	// Base are the settings every task starts from (training.Defaults(), or a recipe's), and
	// Shared the settings, by name, that every task sets on them before its own (e.g. the cnn
	// for 2000 steps: `cifarlab sweep`'s train flags); a task's own setting of the same name
	// wins. Base.Record.Params, Shared and the task's own go into its params (run.json's).
	Base   training.Settings
	Shared []Setting
	// Grid is crossed: every combination of its axes' values is a task. List adds tasks with
	// their own settings. At least one of them must give a task.
	Grid []Axis
	List [][]Setting
}

// Task is one run of a sweep: the base settings and its own, trained into its own run folder.
type Task struct {
	// Index is the task's position: its SLURM_ARRAY_TASK_ID in the job array.
	Index int `json:"index"`
	// Name is its run folder's name in the runs folder: the sweep's name and its settings,
	// e.g. "lr-seed_1-lr_0.1".
	Name string `json:"name"`
	// Settings are the task's own settings (from the grid or the list).
	Settings []Setting `json:"settings"`
	// Params are the settings given for it, by name: the base's, the shared ones and its own
	// (run.json's params).
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

// FileFormat is the format of sweep.json: 2 holds the base settings (training.Settings), the
// shared settings and each task's own; a sweep.json of format 1 (its tasks as train flags,
// without the field) is read for its status only.
const FileFormat = 2

// Sweep is the content of sweep.json: the grid, the tasks and their submissions.
type Sweep struct {
	Format int               `json:"format,omitempty"`
	Name   string            `json:"name"`
	Grid   []Axis            `json:"grid,omitempty"`
	List   [][]Setting       `json:"list,omitempty"`
	Base   training.Settings `json:"base"`
	Shared []Setting         `json:"shared,omitempty"`
	Tasks  []Task            `json:"tasks"`
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
// of the runs folder: a setting that does not exist, a bad value, settings training refuses, an
// empty grid, a runs folder that cannot be written, a name already used with another grid
// (*NameUsedError) and a run folder of the same name trained with other settings
// (*SettingsError) are errors.
func Plan(spec Spec) (*Sweep, error) {
	if !nameRE.MatchString(spec.Name) {
		return nil, &GridError{Arg: "--name " + spec.Name, Problem: "is not a sweep name",
			Fix: "start with a letter or digit and use letters, digits and . _ - only"}
	}
	if len(spec.Grid) == 0 && len(spec.List) == 0 {
		return nil, &GridError{Arg: "the sweep", Problem: "has no grid and no list, so no task",
			Fix: "give at least one --grid FLAG=V1,V2 (or --list 'FLAG=V ...')"}
	}
	s := &Sweep{Format: FileFormat, Name: spec.Name, Grid: spec.Grid, List: spec.List, Base: spec.Base, Shared: spec.Shared, Created: time.Now().UTC(), runs: spec.Runs}
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

// plan checks the settings the base, the shared ones, the grid and the list set, expands the
// grid, and checks every task's settings as training does (training.Settings.Validate).
func (s *Sweep) plan(spec Spec) error {
	if spec.Base.Checkpoint.Dir != "" {
		return checkField("the base settings", "checkpoint")
	}
	if err := checkShared(spec); err != nil {
		return err
	}
	for _, a := range spec.Grid {
		if err := checkAxis(spec, a); err != nil {
			return err
		}
	}
	for _, l := range spec.List {
		for _, st := range l {
			if err := checkField("--list "+st.Field, st.Field); err != nil {
				return err
			}
		}
	}
	seen := map[string]int{}
	for i, settings := range combinations(spec.Grid, spec.List) {
		t := Task{Index: i, Name: spec.Name, Settings: settings, Params: maps.Clone(spec.Base.Record.Params)}
		if t.Params == nil {
			t.Params = map[string]string{}
		}
		for _, st := range spec.Shared {
			t.Params[st.Field] = st.Value
		}
		for _, st := range settings {
			t.Name += "-" + st.Field + "_" + st.Value
			t.Params[st.Field] = st.Value
		}
		if j, dup := seen[t.Name]; dup {
			return &GridError{Arg: "task " + t.Name, Problem: fmt.Sprintf("is task %d too", j), Fix: "list each combination once"}
		}
		seen[t.Name] = i
		s.Tasks = append(s.Tasks, t)
		if _, err := s.TaskSettings(i); err != nil {
			return refused(t.Name, err)
		}
	}
	return nil
}

// refused is the error of a task whose settings training refuses (err).
func refused(task string, err error) error {
	fix := "fix the flags"
	if ve, ok := errors.AsType[*training.ValueError](err); ok && !ve.Unknown && ve.Err == nil { // not of the flag's type
		fix = "fix the flag's value"
	}
	return &GridError{Arg: "task " + task, Problem: "is refused by `cifarlab train`", Err: err, Fix: fix}
}

// TaskSettings are the settings task i trains with: the base settings with the shared ones and
// the task's own applied (training.Settings.Apply, the task's winning), validated, its run folder as their checkpoint directory
// and its params. A sweep of format 1 has none: it was planned by a lab before Settings.
func (s *Sweep) TaskSettings(i int) (training.Settings, error) {
	if s.Format < FileFormat {
		return training.Settings{}, fmt.Errorf("sweep %s was planned by a lab before training.Settings (sweep.json format %d): plan it again "+
			"under another --name; its runs stay in %s", s.Name, max(1, s.Format), s.runs)
	}
	t := s.Tasks[i]
	c := s.Base
	values := map[string]string{}
	for _, st := range append(slices.Clone(s.Shared), t.Settings...) {
		values[st.Field] = st.Value
	}
	if err := c.Apply(values); err != nil {
		return training.Settings{}, err
	}
	c.Checkpoint.Dir, c.Record.Params = s.RunDir(i), maps.Clone(t.Params)
	return c, c.Validate()
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
	if given := rec.Settings.Given; !maps.Equal(given, t.Params) {
		return &SettingsError{Dir: dir, Task: t.Name, Problem: fmt.Sprintf("it holds a run trained with %s, the task has %s",
			formatParams(given), formatParams(t.Params))}
	}
	return nil
}

// sameAs is true when s and old have the same grid, list and base settings.
func (s *Sweep) sameAs(old *Sweep) bool { return s.describe() == old.describe() }

// describe is the sweep's grid, list and shared settings in words.
func (s *Sweep) describe() string {
	var parts []string
	for _, a := range s.Grid {
		parts = append(parts, "--grid "+a.Field+"="+strings.Join(a.Values, ","))
	}
	for _, l := range s.List {
		var kv []string
		for _, st := range l {
			kv = append(kv, st.Field+"="+st.Value)
		}
		parts = append(parts, "--list '"+strings.Join(kv, " ")+"'")
	}
	for _, st := range s.Shared {
		parts = append(parts, "--"+st.Field+" "+st.Value)
	}
	return strings.Join(parts, " ")
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
	var head struct {
		Format int `json:"format"`
	}
	if err := json.Unmarshal(data, &head); err == nil && head.Format > FileFormat {
		return nil, &runs.FormatError{What: path, Format: head.Format, Lab: FileFormat}
	}
	s := &Sweep{}
	if head.Format < FileFormat { // format 1: its base and tasks are flags, not read
		var v1 struct {
			Name        string       `json:"name"`
			Tasks       []Task       `json:"tasks"`
			Submissions []Submission `json:"submissions"`
			Created     time.Time    `json:"created"`
		}
		err = json.Unmarshal(data, &v1)
		s.Name, s.Tasks, s.Submissions, s.Created = v1.Name, v1.Tasks, v1.Submissions, v1.Created
	} else {
		err = json.Unmarshal(data, s)
	}
	if err != nil {
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
