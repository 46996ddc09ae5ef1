package training_test

import (
	"context"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// Test-time augmentation: EvalOptions.TTA averages the logits of airbench's views of every
// test image (the image and its mirror; with TTAMirrorTranslate also the image shifted by one
// pixel up-left and down-right) inside the evaluation program.
func ExampleEvalOptions_tta() {
	backend, err := backends.New("go")
	if err != nil {
		panic(err)
	}
	spec := data.CIFAR10()
	synth := data.SynthOptions{Seed: 1, TrainSize: 500, TestSize: 100}
	train, _ := data.SynthesizeRecords(spec, data.SplitTrain, synth)
	test, _ := data.SynthesizeRecords(spec, data.SplitTest, synth)
	s := training.Defaults()
	s.Model.Arch, s.Run.Steps, s.Data.BatchSize, s.Eval.SkipFinal = cifarlib.ArchLinear, 30, 32, true
	res, err := training.Train(context.Background(), s, training.Env{Train: train, Backend: backend, Progress: training.ProgressOff})
	if err != nil {
		panic(err)
	}
	for _, level := range []int{training.TTANone, training.TTAMirror, training.TTAMirrorTranslate} {
		ev, err := res.Evaluate(context.Background(), test, training.EvalOptions{TTA: level})
		if err != nil {
			panic(err)
		}
		fmt.Println("TTA", ev.TTA, "examples:", ev.Examples, "accuracy above 50%:", ev.Accuracy > 0.5)
	}
	_, err = res.Evaluate(context.Background(), test, training.EvalOptions{TTA: 3})
	fmt.Println(err)
	// Output:
	// TTA 0 examples: 100 accuracy above 50%: true
	// TTA 1 examples: 100 accuracy above 50%: true
	// TTA 2 examples: 100 accuracy above 50%: true
	// training: EvalOptions.TTA 3 is not a test-time augmentation level: use TTANone (0), TTAMirror (1) or TTAMirrorTranslate (2)
}
