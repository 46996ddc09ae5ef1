package runs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// Each run trained with a Checkpoint.Dir in a runs folder is a row of List' table (what
// `cifarlab runs` prints and the notebooks' lab.Runs() returns), with TensorBoard scalars in
// its folder; a folder that is not a run is listed as such.
func ExampleList() {
	backend, err := backends.New("go")
	if err != nil {
		panic(err)
	}
	runsDir, _ := os.MkdirTemp("", "runs")
	defer os.RemoveAll(runsDir)
	spec := data.CIFAR10()
	synth := data.SynthOptions{Seed: 1, TrainSize: 200, TestSize: 50}
	train, _ := data.SynthesizeRecords(spec, data.SplitTrain, synth)
	test, _ := data.SynthesizeRecords(spec, data.SplitTest, synth)
	for _, steps := range []int{4, 8} {
		s := training.Defaults()
		s.Data.Spec, s.Model.Arch, s.Run.Steps, s.Data.BatchSize = spec, cifarlib.ArchLinear, steps, 16
		s.Checkpoint.Dir = filepath.Join(runsDir, fmt.Sprintf("linear-%d", steps))
		_, err := training.Train(context.Background(), s, training.Env{Train: train, Test: test, Backend: backend, Progress: training.ProgressOff})
		if err != nil {
			panic(err)
		}
	}
	_ = os.Mkdir(filepath.Join(runsDir, "photos"), 0o755)

	list, err := runs.List(runsDir)
	if err != nil {
		panic(err)
	}
	for _, r := range list {
		fmt.Printf("%-9s %-8s steps %d, test accuracy recorded: %v, TensorBoard: %v\n", r.Name, r.Status, r.Steps, r.HasTest, r.TensorBoard)
	}
	// Output:
	// linear-4  done     steps 4, test accuracy recorded: true, TensorBoard: true
	// linear-8  done     steps 8, test accuracy recorded: true, TensorBoard: true
	// photos    foreign  steps 0, test accuracy recorded: false, TensorBoard: false
}
