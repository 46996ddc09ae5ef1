package cifarlib_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/cifarlib"
)

// Each run trained with a CheckpointDir in a runs folder is a row of ListRuns' table (what
// `cifarlab runs` prints and the notebooks' lab.Runs() returns), with TensorBoard scalars in
// its folder; a folder that is not a run is listed as such.
func ExampleListRuns() {
	backend, err := cifarlib.NewBackend("go")
	if err != nil {
		panic(err)
	}
	runs, _ := os.MkdirTemp("", "runs")
	defer os.RemoveAll(runs)
	spec := cifarlib.CIFAR10()
	synth := cifarlib.SynthOptions{Seed: 1, TrainSize: 200, TestSize: 50}
	train, _ := cifarlib.SynthesizeRecords(spec, cifarlib.SplitTrain, synth)
	test, _ := cifarlib.SynthesizeRecords(spec, cifarlib.SplitTest, synth)
	for _, steps := range []int{4, 8} {
		_, err := cifarlib.Train(context.Background(), cifarlib.TrainConfig{
			Spec: spec, TrainRecords: train, TestRecords: test, Model: cifarlib.ArchLinear, Steps: steps,
			BatchSize: 16, Backend: backend, Progress: cifarlib.ProgressOff,
			CheckpointDir: filepath.Join(runs, fmt.Sprintf("linear-%d", steps)),
		})
		if err != nil {
			panic(err)
		}
	}
	_ = os.Mkdir(filepath.Join(runs, "photos"), 0o755)

	list, err := cifarlib.ListRuns(runs)
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
