package nb

import (
	"errors"
	"fmt"
	"os"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
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
