package training_test

import (
	"context"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// A process that trains the same run twice (a lab process that outlives notebook cells) keeps
// the compiled programs in a training.Programs: the second run compiles nothing and trains to
// the same weights. Each run's timeline says what it compiled.
func ExamplePrograms() {
	backend, _ := backends.New("go")
	spec := data.CIFAR10()
	synth := data.SynthOptions{Seed: 1, TrainSize: 200, TestSize: 50}
	train, _ := data.SynthesizeRecords(spec, data.SplitTrain, synth)
	test, _ := data.SynthesizeRecords(spec, data.SplitTest, synth)
	programs := &training.Programs{} // kept by the process, passed to every run
	s := training.Defaults()
	s.Model.Arch, s.Run.Steps, s.Data.BatchSize, s.Eval.BatchSize = cifarlib.ArchLinear, 5, 16, 32
	env := training.Env{Train: train, Test: test, Backend: backend, Progress: training.ProgressOff, Programs: programs}

	var losses []float64
	for run := 1; run <= 2; run++ {
		res, err := training.Train(context.Background(), s, env)
		if err != nil {
			panic(err)
		}
		tl := res.Timeline
		fmt.Printf("run %d: compiled (or loaded from the compile cache) %d train step, %d evaluation, %d initialisation\n", run,
			tl.Programs(runs.ProgramTrainStep), tl.Programs(runs.ProgramEvaluation), tl.Programs(runs.ProgramInit))
		losses = append(losses, res.Eval.Loss)
	}
	fmt.Println("same test loss:", losses[0] == losses[1])
	// Output:
	// run 1: compiled (or loaded from the compile cache) 1 train step, 1 evaluation, 1 initialisation
	// run 2: compiled (or loaded from the compile cache) 0 train step, 0 evaluation, 0 initialisation
	// same test loss: true
}
