package sweep_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/sweep"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// A grid of two seeds and two learning rates, planned and shown as the sbatch command that
// would submit it as one job array (what `cifarlab sweep --dry-run --slurm ...` prints).
func Example() {
	runs, _ := os.MkdirTemp("", "runs")
	defer os.RemoveAll(runs)
	steps := []sweep.Setting{{Field: "steps", Value: "2000"}} // settings by their names in training.Fields
	seeds, _ := sweep.ParseAxis("seed=1,2")
	lrs, _ := sweep.ParseAxis("lr=0.1,0.05")
	s, err := sweep.Plan(sweep.Spec{Name: "lr", Runs: runs, Grid: []sweep.Axis{seeds, lrs}, Base: training.Defaults(), Shared: steps})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range s.Tasks {
		flags := []string{"--steps 2000"}
		for _, st := range t.Settings {
			flags = append(flags, "--"+st.Field+"="+st.Value)
		}
		fmt.Println(t.Index, t.Name, strings.Join(flags, " "))
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
	seeds, _ := sweep.ParseAxis("seed=1,2,3")
	s, err := sweep.Plan(sweep.Spec{Name: "seeds", Runs: runs, Grid: []sweep.Axis{seeds}, Base: training.Defaults(),
		Shared: []sweep.Setting{{Field: "steps", Value: "100"}}})
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
