package nb

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/sweep"
)

// Runs returns the table of every run in the lab's runs folder (runs.List): name,
// status, dataset, model, head, guard, devices, steps, final loss, test accuracy, wall time and,
// for a transferred run, its source. A folder that is half-written (a run still training, or
// killed) or not a run is a row with its status and the reason. Show displays it as a table;
// `cifarlab runs` prints the same. No runs folder yet gives an empty table.
func (l *Lab) Runs() (runs.Table, error) {
	if l.RunsDir == "" {
		return nil, fmt.Errorf("nb: the lab has no runs folder: create it with nb.Open or nb.New")
	}
	list, err := runs.List(l.RunsDir)
	if errors.Is(err, os.ErrNotExist) {
		return runs.Table{}, nil
	}
	return list, err
}

// Select returns the runs called names, in that order, from runs (a Lab.Runs table), for
// Compare. A name that is not there is an error listing the runs that are.
func Select(list runs.Table, names ...string) ([]runs.Info, error) {
	var out []runs.Info
	for _, name := range names {
		r, ok := list.Find(name)
		if !ok {
			var have []string
			for _, r := range list {
				have = append(have, r.Name)
			}
			return nil, fmt.Errorf("nb: no run %q in the runs folder (it has %q): run the cell that trains it first", name, have)
		}
		out = append(out, r)
	}
	return out, nil
}

// Compare shows, as Compare does, the curves of the runs called names in the lab's runs folder,
// overlaid and named by what differs between them (e.g. "label smoothing 0.2" and "label
// smoothing 0.1"): the one line of a cell, `nb.Check(lab.Compare("ls-0.2", "ls-0.1"))`. A name
// that is not there is an error listing the runs that are (Select).
func (l *Lab) Compare(names ...string) error {
	list, err := l.Runs()
	if err != nil {
		return err
	}
	chosen, err := Select(list, names...)
	if err != nil {
		return err
	}
	Compare(chosen...)
	return nil
}

// Sweep returns the table of the sweep name (`cifarlab sweep --name NAME`, with its runs in
// the lab's runs folder): its runs grouped by hyperparameter, best mean test accuracy first,
// with the mean and spread over the flags in over (default: the seeds). Show displays it.
func (l *Lab) Sweep(name string, over ...string) (*sweep.Table, error) {
	s, err := sweep.Load(l.RunsDir, name)
	if err != nil {
		return nil, err
	}
	return s.Table(over...), nil
}

// CompareBest shows, as Compare does, the curves of the best run of each of the n best groups
// of a sweep's table (from Lab.Sweep).
func (l *Lab) CompareBest(t *sweep.Table, n int) error {
	return l.Compare(t.Best(n)...)
}

// RunSweep runs the sweep name on this machine and returns its table: one call for a cell,
// `cifarlab sweep --local` with the lab's runs and data folders, the task lines in the cell's
// output. args are the sweep's grid and train's flags, as on the command line:
//
//	table, err := lab.RunSweep("lr", "--grid", "lr=0.01,0.001", "--grid", "seed=1,2", "--model", "cnn", "--steps", "200")
//
// The cifarlab command comes from PATH (the lab's kernels put the repository's .bin there).
// Running the same call again skips the tasks that are done; on a cluster, use
// `cifarlab sweep --slurm` from a terminal and Lab.Sweep to read the result.
func (l *Lab) RunSweep(name string, args ...string) (*sweep.Table, error) {
	bin, err := exec.LookPath("cifarlab")
	if err != nil {
		return nil, fmt.Errorf("nb: RunSweep needs the cifarlab command (%w): run kernel/setup.sh, which builds it into .bin", err)
	}
	cmd := exec.Command(bin, append([]string{"sweep", "--local", "--runs", l.RunsDir, "--name", name, "--data", l.DataDir}, args...)...)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = output(), &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("nb: cifarlab sweep %s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return l.Sweep(name)
}
