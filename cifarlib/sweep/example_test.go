package sweep_test

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/sweep"
)

// A grid of two seeds and two learning rates, planned and shown as the sbatch command that
// would submit it as one job array (what `cifarlab sweep --dry-run --slurm ...` prints).
func Example() {
	runs, _ := os.MkdirTemp("", "runs")
	defer os.RemoveAll(runs)
	train := func() *flag.FlagSet { // the flags of `cifarlab train` the grid uses
		fs := flag.NewFlagSet("cifarlab train", flag.ContinueOnError)
		fs.Int64("seed", 0, "")
		fs.Float64("lr", 0, "")
		fs.Int("steps", 0, "")
		return fs
	}
	seeds, _ := sweep.ParseAxis("seed=1,2")
	lrs, _ := sweep.ParseAxis("lr=0.1,0.05")
	s, err := sweep.Plan(sweep.Spec{Name: "lr", Runs: runs, Grid: []sweep.Axis{seeds, lrs}, Shared: []string{"--steps", "2000"}, Flags: train})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range s.Tasks {
		fmt.Println(t.Index, t.Name, strings.Join(t.Args, " "))
	}
	sl := &sweep.Slurm{Binary: "cifarlab", Flags: []string{"--partition=gpu", "--gres=gpu:1"}, Parallel: 2}
	cmd := sl.Command(s, s.Unfinished())
	fmt.Println(strings.Join(cmd[:5], " "), "...", strings.Join(cmd[8:10], " "), "...")
	// Output:
	// 0 lr-seed_1-lr_0.1 --steps 2000 --seed=1 --lr=0.1
	// 1 lr-seed_1-lr_0.05 --steps 2000 --seed=1 --lr=0.05
	// 2 lr-seed_2-lr_0.1 --steps 2000 --seed=2 --lr=0.1
	// 3 lr-seed_2-lr_0.05 --steps 2000 --seed=2 --lr=0.05
	// sbatch --parsable --array=0-3%2 --requeue --signal=B:USR1@300 ... --partition=gpu --gres=gpu:1 ...
}

// An executor is picked once, by the user's flags, and called the same way whichever it is:
// here the local one, on a machine with two GPUs, says what it would run (what
// `cifarlab sweep --local --dry-run` prints).
func ExampleExecutor() {
	runs, _ := os.MkdirTemp("", "runs")
	defer os.RemoveAll(runs)
	train := func() *flag.FlagSet {
		fs := flag.NewFlagSet("cifarlab train", flag.ContinueOnError)
		fs.Int64("seed", 0, "")
		return fs
	}
	seeds, _ := sweep.ParseAxis("seed=1,2,3")
	s, err := sweep.Plan(sweep.Spec{Name: "seeds", Runs: runs, Grid: []sweep.Axis{seeds}, Flags: train})
	if err != nil {
		fmt.Println(err)
		return
	}
	slurmFlags := "" // --slurm "SBATCH FLAGS"
	var ex sweep.Executor = &sweep.Local{Binary: "cifarlab", GPUs: []string{"0", "1"}}
	if slurmFlags != "" {
		ex = &sweep.Slurm{Binary: "cifarlab", Flags: strings.Fields(slurmFlags)}
	}
	said, err := ex.DryRun(s, s.Unfinished())
	fmt.Println(said, err)
	// Output:
	// would run tasks 0-2 here, 2 at a time <nil>
}
