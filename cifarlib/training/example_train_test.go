package training_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// Train a model in one call: its Settings (Defaults, overridden field by field) and its Env
// (synthetic CIFAR-10 here; Settings.Data.Dir loads real data), then read the test accuracy,
// per-class accuracy and the curves (History.Plot draws them in a GoNB notebook).
func ExampleTrain() {
	backend, err := backends.New("go")
	if err != nil {
		panic(err)
	}
	spec := data.CIFAR10()
	synth := data.SynthOptions{Seed: 1, TrainSize: 500, TestSize: 100}
	train, _ := data.SynthesizeRecords(spec, data.SplitTrain, synth)
	test, _ := data.SynthesizeRecords(spec, data.SplitTest, synth)

	s := training.Defaults()
	s.Model.Arch, s.Run.Steps, s.Data.BatchSize = cifarlib.ArchLinear, 30, 32
	res, err := training.Train(context.Background(), s, training.Env{Train: train, Test: test, Backend: backend, Progress: training.ProgressOff})
	if err != nil {
		panic(err)
	}
	fmt.Println("steps:", res.EndStep, "history points:", len(res.History.Points))
	fmt.Println("test examples:", res.Eval.Examples, "classes:", len(res.Eval.PerClass))
	fmt.Println("accuracy above 50%:", res.Eval.Accuracy > 0.5)
	fmt.Println("zero-loss examples:", res.ZeroLoss.OutOfRange)
	_ = res.History.Plot() // Draws loss and accuracy curves in a notebook; nothing elsewhere.
	// Output:
	// steps: 30 history points: 30
	// test examples: 100 classes: 10
	// accuracy above 50%: true
	// zero-loss examples: 0
}

// The seed's bug: a 10-output head trained on CIFAR-100 labels. With the guard (the default)
// training stops before the first step; unguarded, GoMLX trains silently and the result says
// how many examples contributed zero loss.
func ExampleTrain_headMismatch() {
	backend, _ := backends.New("go")
	spec := data.CIFAR100(data.LabelsFine)
	train, _ := data.SynthesizeRecords(spec, data.SplitTrain, data.SynthOptions{Seed: 1, TrainSize: 200, TestSize: 100})
	s := training.Defaults()
	s.Data.Spec, s.Model.Arch, s.Model.Head, s.Run.Steps, s.Data.BatchSize, s.Eval.SkipFinal = spec, cifarlib.ArchLinear, 10, 3, 20, true
	env := training.Env{Train: train, Backend: backend, Progress: training.ProgressOff}

	_, err := training.Train(context.Background(), s, env)
	fmt.Println(errors.Is(err, cifarlib.ErrHeadMismatch), err)

	s.Model.Unguarded = true
	res, err := training.Train(context.Background(), s, env)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d of %d examples seen had labels >= 10: zero loss\n", res.ZeroLoss.OutOfRange, res.ZeroLoss.Seen)
	// Output:
	// true model head has 10 outputs but dataset cifar100 has 100 classes (head overridden to 10): build the model with cifarlib's factory for cifar100, or set the head to 100
	// 58 of 60 examples seen had labels >= 10: zero loss
}
