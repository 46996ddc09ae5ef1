package training_test

import (
	"context"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// Train with airbench94's recipe: Config.Recipe fills every field left at zero (here its
// optimizer, schedule, label smoothing, lookahead and augmentation) and explicit fields win
// (the small cnn instead of airbench94's network, batch 8, 0.5 epochs; Config.RecipeOff keeps
// the final evaluation without test-time augmentation). Trainer.Config shows what it resolved.
func ExampleConfig_recipe() {
	backend, err := backends.New("go")
	if err != nil {
		panic(err)
	}
	spec := data.CIFAR10()
	synth := data.SynthOptions{Seed: 1, TrainSize: 64, TestSize: 20}
	train, _ := data.SynthesizeRecords(spec, data.SplitTrain, synth)
	test, _ := data.SynthesizeRecords(spec, data.SplitTest, synth)

	t, err := training.NewTrainer(training.Config{Recipe: training.RecipeAirbench94, RecipeOff: []string{"TTA"},
		Spec: spec, TrainRecords: train, TestRecords: test, Model: cifarlib.ArchCNN, BatchSize: 8, Epochs: 0.5,
		EvalEvery: training.EvalOff, Backend: backend, Progress: training.ProgressOff})
	if err != nil {
		panic(err)
	}
	c := t.Config()
	fmt.Printf("%s, %d steps of %d: %s lr %g momentum %g wd %g, %s schedule, label smoothing %g, lookahead %t, %s augmentation\n",
		c.Model, c.Steps, c.BatchSize, c.Optimizer, c.LearningRate, c.Momentum, c.WeightDecay, c.Schedule, c.LabelSmoothing,
		c.Lookahead, c.Augmentation)
	res, err := t.Run(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println("trained to step", res.EndStep, "and evaluated on", res.Eval.Examples, "test images with TTA", res.Eval.TTA)
	// Output:
	// cnn, 4 steps of 8: nesterov lr 11.5 momentum 0.85 wd 0.0153, triangle schedule, label smoothing 0.2, lookahead true, altflip-translate augmentation
	// trained to step 4 and evaluated on 20 test images with TTA 0
}
