package sweep

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"
	"github.com/stretchr/testify/require"
)

func spec(runs string, grid ...string) Spec {
	s := Spec{Name: "lr", Runs: runs, Base: training.Defaults(), Shared: []Setting{{"steps", "10"}, {"model", "cnn"}}}
	for _, g := range grid {
		a, err := ParseAxis(g)
		if err != nil {
			panic(err)
		}
		s.Grid = append(s.Grid, a)
	}
	return s
}

func TestPlanTasks(t *testing.T) {
	runs := t.TempDir()
	sp := spec(runs, "seed=1,2", "lr=0.1,0.05")
	sp.List = [][]Setting{{{"seed", "7"}, {"augment", "true"}}}
	s, err := Plan(sp)
	require.NoError(t, err)
	var names []string
	for _, tk := range s.Tasks {
		names = append(names, tk.Name)
	}
	require.Equal(t, []string{"lr-seed_1-lr_0.1", "lr-seed_1-lr_0.05", "lr-seed_2-lr_0.1", "lr-seed_2-lr_0.05", "lr-seed_7-augment_true"}, names)
	require.Equal(t, []Setting{{"seed", "2"}, {"lr", "0.05"}}, s.Tasks[3].Settings)
	require.Equal(t, map[string]string{"steps": "10", "model": "cnn", "seed": "2", "lr": "0.05"}, s.Tasks[3].Params)
	ts, err := s.TaskSettings(3)
	require.NoError(t, err)
	require.Equal(t, []any{10, "cnn", int64(2), optimizers.Optimizer(optimizers.Adam{LearningRate: 0.05}), filepath.Join(runs, "lr-seed_2-lr_0.05"),
		s.Tasks[3].Params}, []any{ts.Run.Steps, ts.Model.Arch, ts.Run.Seed, ts.Optimizer, ts.Checkpoint.Dir, ts.Record.Params})
	require.Equal(t, []int{0, 1, 2, 3, 4}, s.Unfinished())

	// Nothing is written by Plan; Save then Load round-trips.
	_, err = Load(runs, "lr")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, s.Save())
	back, err := Load(runs, "lr")
	require.NoError(t, err)
	require.Equal(t, s.Tasks, back.Tasks)
	require.Equal(t, s.Grid, back.Grid)
	require.Equal(t, s.Base, back.Base)
}

func TestPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"unknown flag", func(s *Spec) { s.Grid = []Axis{{"sed", []string{"1"}}} },
			"sweep: --grid sed names \"sed\", which is not a setting of `cifarlab train`: use one of " + settingNames()},
		{"reserved flag", func(s *Spec) { s.Grid = []Axis{{"checkpoint", []string{"a"}}} },
			"sweep: --grid checkpoint sets checkpoint, which the sweep sets for each task: leave it out: each task trains into its own folder of the runs folder"},
		{"reserved shared flag", func(s *Spec) { s.Shared = append(s.Shared, Setting{"checkpoint", "runs/x"}) },
			"sweep: the shared flags sets checkpoint, which the sweep sets for each task: leave it out: each task trains into its own folder of the runs folder"},
		{"reserved base setting", func(s *Spec) { s.Base.Checkpoint.Dir = "runs/x" },
			"sweep: the base settings sets checkpoint, which the sweep sets for each task: leave it out: each task trains into its own folder of the runs folder"},
		{"empty grid", func(s *Spec) { s.Grid = nil },
			"sweep: the sweep has no grid and no list, so no task: give at least one --grid FLAG=V1,V2 (or --list 'FLAG=V ...')"},
		{"axis without values", func(s *Spec) { s.Grid = []Axis{{"seed", nil}} }, "sweep: --grid seed has no values: give at least one value"},
		{"bad value", func(s *Spec) { s.Grid = []Axis{{"seed", []string{"x"}}} },
			"sweep: --grid seed has a value the setting does not take: training: setting seed=\"x\": use a whole number: fix the value"},
		// An axis's values are checked by the setting's row of the table, its range too, before any task.
		{"value out of range", func(s *Spec) { s.Grid = []Axis{{"lr", []string{"0.1", "-1"}}} },
			"sweep: --grid lr has a value the setting does not take: training: config: Optimizer.LearningRate=-1: use a number >= 0: fix the value"},
		{"value of the shared optimizer's", func(s *Spec) {
			s.Grid = []Axis{{"momentum", []string{"1"}}}
			s.Shared = append(s.Shared, Setting{"optimizer", "nesterov"})
		},
			"sweep: --grid momentum has a value the setting does not take: training: config: Optimizer.Momentum=1: use a number in [0, 1): fix the value"},
		{"bad name", func(s *Spec) { s.Name = "../up" },
			"sweep: --name ../up is not a sweep name: start with a letter or digit and use letters, digits and . _ - only"},
		{"settings training refuses", func(s *Spec) { s.Shared = s.Shared[1:] },
			"sweep: task lr-seed_1 is refused by `cifarlab train`: training: config: Run.Steps=0: set the number of training steps " +
				"(Steps > 0) or of epochs (Epochs > 0): fix the flags"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := spec(t.TempDir(), "seed=1")
			tc.edit(&sp)
			_, err := Plan(sp)
			require.EqualError(t, err, tc.want)
			var ge *GridError
			require.ErrorAs(t, err, &ge)
		})
	}
}

func TestParseAxisErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"seed", "sweep: seed is not FLAG=V1,V2,...: write e.g. --grid seed=1,2,3"},
		{"seed=1,,2", "sweep: seed=1,,2 has an empty value: remove the extra comma or give the value"},
		{"seed=1,1", "sweep: seed=1,1 has the value \"1\" twice: list each value once"},
		{"data=/x/y", "sweep: data=/x/y has the value \"/x/y\", which cannot be part of a run folder's name: " +
			"use letters, digits and . _ - only; set paths and other values once, outside the grid"},
		{"model=..", "sweep: model=.. has the value \"..\", which cannot be part of a run folder's name: " +
			"use letters, digits and . _ - only; set paths and other values once, outside the grid"},
	} {
		_, err := ParseAxis(tc.in)
		require.EqualError(t, err, tc.want, tc.in)
	}
	a, err := ParseAxis("--lr=0.1, 0.05")
	require.NoError(t, err)
	require.Equal(t, Axis{"lr", []string{"0.1", "0.05"}}, a)
	l, err := ParseList("seed=1 --lr=0.1")
	require.NoError(t, err)
	require.Equal(t, []Setting{{"seed", "1"}, {"lr", "0.1"}}, l)
	_, err = ParseList("seed=1 seed=2")
	require.EqualError(t, err, "sweep: seed=1 seed=2 sets --seed twice: set each flag once per task")
}

// A name used with another grid is refused; the same grid continues the sweep.
func TestPlanNameUsedWithAnotherGrid(t *testing.T) {
	runs := t.TempDir()
	s, err := Plan(spec(runs, "seed=1,2"))
	require.NoError(t, err)
	s.Submissions = []Submission{{Executor: "slurm", JobID: "17", Tasks: []int{0, 1}}}
	require.NoError(t, s.Save())

	again, err := Plan(spec(runs, "seed=1,2"))
	require.NoError(t, err)
	require.Equal(t, s.Submissions[0].JobID, again.Submissions[0].JobID, "the same grid continues the sweep")

	_, err = Plan(spec(runs, "seed=1,2,3"))
	var nu *NameUsedError
	require.ErrorAs(t, err, &nu)
	require.EqualError(t, err, `sweep: the name "lr" is already used in `+runs+` by another sweep `+
		`(--grid seed=1,2 --steps 10 --model cnn; this one: --grid seed=1,2,3 --steps 10 --model cnn): `+
		`choose another --name, or repeat the same grid and flags to continue that sweep`)
}

// A run folder of a task's name that holds a run with other settings is refused.
func TestPlanRunFolderWithOtherSettings(t *testing.T) {
	runsDir := t.TempDir()
	dir := filepath.Join(runsDir, "lr-seed_1")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	rec := `{"status":"done","params":{"seed":"1","steps":"500","model":"cnn"}}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, runs.FileName), []byte(rec), 0o644))
	_, err := Plan(spec(runsDir, "seed=1"))
	var se *SettingsError
	require.ErrorAs(t, err, &se)
	require.EqualError(t, err, "sweep: task lr-seed_1: run folder "+dir+" cannot be reused: it holds a run trained with "+
		"--model=cnn --seed=1 --steps=500, the task has --model=cnn --seed=1 --steps=10; move that folder away or choose another --name")

	// The same settings: the run is the task's, and it is done.
	rec = `{"status":"done","params":{"seed":"1","steps":"10","model":"cnn"}}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, runs.FileName), []byte(rec), 0o644))
	s, err := Plan(spec(runsDir, "seed=1,2"))
	require.NoError(t, err)
	require.Equal(t, []int{1}, s.Unfinished())
}

func TestPlanRunsFolderNotWritable(t *testing.T) {
	if os.Geteuid() == 0 {
		// root writes anywhere but on a read-only or missing filesystem: a file in the way.
		file := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(file, nil, 0o644))
		_, err := Plan(spec(filepath.Join(file, "runs"), "seed=1"))
		var rf *RunsFolderError
		require.ErrorAs(t, err, &rf)
		require.ErrorContains(t, err, "cannot be written: mkdir "+file+": not a directory: give --runs a folder you can write")
		return
	}
	runs := t.TempDir()
	require.NoError(t, os.Chmod(runs, 0o555))
	_, err := Plan(spec(runs, "seed=1"))
	var rf *RunsFolderError
	require.ErrorAs(t, err, &rf)
	require.ErrorIs(t, err, os.ErrPermission)
}

func TestArraySpec(t *testing.T) {
	for _, tc := range []struct {
		tasks []int
		want  string
	}{
		{[]int{0, 1, 2, 3}, "0-3"}, {[]int{1, 4, 5, 6}, "1,4-6"}, {[]int{2}, "2"}, {[]int{0, 2, 4}, "0,2,4"},
	} {
		require.Equal(t, tc.want, ArraySpec(tc.tasks))
		require.Equal(t, tc.tasks, parseArraySpec(tc.want))
	}
	require.Equal(t, []int{2, 3}, parseArraySpec("2-3%4"))
	require.Equal(t, []int{1, 4, 5}, parseArraySpec("[1,4-5%1]"))
	require.Equal(t, []int{0, 2, 4}, parseArraySpec("0-4:2"))
}

func TestActive(t *testing.T) {
	for state, want := range map[string]bool{"": false, "PENDING": true, "RUNNING": true, "REQUEUED": true, "COMPLETING": true,
		"COMPLETED": false, "FAILED": false, "CANCELLED": false, "TIMEOUT": false, "PREEMPTED": false, "RUNNING,COMPLETING": true} {
		require.Equal(t, want, active(state), state)
	}
}

// settingNames are the settings a grid may set, sorted, as the sweep lists them.
func settingNames() string {
	var names []string
	for _, n := range training.FieldNames() {
		if n != "checkpoint" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
