package cifarlib_test

import (
	"context"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// Train with bfloat16 convolutions and matrix products (PyTorch's autocast to bfloat16): the
// weights, loss, guards and checkpoints stay float32. CheckPrecision says up front whether a
// backend can; Train refuses a backend that cannot with *PrecisionError.
func ExampleCheckPrecision() {
	backend, err := backends.New("go")
	if err != nil {
		panic(err)
	}
	precision, err := cifarlib.ParsePrecision("bf16-mixed") // cifarlab train --precision bf16-mixed
	if err != nil {
		panic(err)
	}
	fmt.Println("can run:", cifarlib.CheckPrecision(backend, precision) == nil)

	spec := data.CIFAR10()
	train, _ := data.SynthesizeRecords(spec, data.SplitTrain, data.SynthOptions{Seed: 1, TrainSize: 64})
	s := training.Defaults()
	s.Data.Spec, s.Model.Arch, s.Run.Steps, s.Data.BatchSize, s.Compute.Precision, s.Eval.SkipFinal = spec, cifarlib.ArchCNN, 2, 16, precision, true
	res, err := training.Train(context.Background(), s, training.Env{Train: train, Backend: backend, Progress: training.ProgressOff})
	if err != nil {
		panic(err)
	}
	fmt.Println("precision:", res.Precision, "steps:", res.EndStep)
	batch, _ := train.Batch(0, 4)
	logits, _ := res.Logits(batch.Images)
	fmt.Println("logits:", logits.DType(), logits.Shape().Dimensions)
	// Output:
	// can run: true
	// precision: bf16-mixed steps: 2
	// logits: Float32 [4 10]
}
