package training_test

import (
	"context"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"
)

// Train with airbench94's recipe: Airbench94 returns its settings (its optimizer, schedule,
// label smoothing, lookahead and augmentation), and the run overrides them field by field (the
// small cnn instead of airbench94's network, which also takes its whitening bias's epochs to
// 0, batch 8, 0.5 epochs, and no test-time augmentation: 0 is a value like any other).
// Trainer.Settings shows what they resolved to.
func ExampleAirbench94() {
	backend, err := backends.New("go")
	if err != nil {
		panic(err)
	}
	spec := data.CIFAR10()
	synth := data.SynthOptions{Seed: 1, TrainSize: 64, TestSize: 20}
	train, _ := data.SynthesizeRecords(spec, data.SplitTrain, synth)
	test, _ := data.SynthesizeRecords(spec, data.SplitTest, synth)

	s := training.Airbench94()
	s.Model.Arch, s.Data.BatchSize, s.Run.Epochs, s.Eval.TTA, s.Eval.Every = cifarlib.ArchCNN, 8, 0.5, training.TTANone, training.EvalOff
	nesterov := s.Optimizer.(optimizers.Nesterov)
	nesterov.WhitenBiasEpochs = 0
	s.Optimizer = nesterov
	t, err := training.NewTrainer(s, training.Env{Train: train, Test: test, Backend: backend, Progress: training.ProgressOff})
	if err != nil {
		panic(err)
	}
	c := t.Settings()
	n := c.Optimizer.(optimizers.Nesterov)
	fmt.Printf("%s, %d steps of %d: %s lr %g momentum %g wd %g, %s schedule, label smoothing %g, lookahead %t, %s augmentation\n",
		c.Model.Arch, c.Run.Steps, c.Data.BatchSize, n.Algorithm(), n.LearningRate, n.Momentum, n.WeightDecay, c.Schedule.Name,
		c.Run.LabelSmoothing, c.Run.Lookahead, c.Data.Augmentation)
	res, err := t.Run(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println("trained to step", res.EndStep, "and evaluated on", res.Eval.Examples, "test images with TTA", res.Eval.TTA)
	// Output:
	// cnn, 4 steps of 8: nesterov lr 11.5 momentum 0.85 wd 0.0153, triangle schedule, label smoothing 0.2, lookahead true, altflip-translate augmentation
	// trained to step 4 and evaluated on 20 test images with TTA 0
}
