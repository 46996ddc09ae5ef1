package nb

import (
	"fmt"
	"os/exec"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/sweep"
)

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
