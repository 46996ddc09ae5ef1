package training_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"
)

// Carry a CIFAR-10 run to CIFAR-100: loading it as it is into a 100-class model is refused
// with PyTorch's size-mismatch message; Settings.Transfer.From transfers it (backbone bit for
// bit, a new head of 100 from the seed, the optimizer state and step restarted).
func ExampleTransferSettings() {
	backend, _ := backends.New("go")
	tmp, _ := os.MkdirTemp("", "example-transfer-")
	defer os.RemoveAll(tmp)
	synth := data.SynthOptions{Seed: 1, TrainSize: 64, TestSize: 16}
	c10, c100 := data.CIFAR10(), data.CIFAR100(data.LabelsFine)
	train10, _ := data.SynthesizeRecords(c10, data.SplitTrain, synth)
	train100, _ := data.SynthesizeRecords(c100, data.SplitTrain, synth)

	run10 := filepath.Join(tmp, "c10")
	s := training.Defaults()
	s.Model.Arch, s.Run.Steps, s.Data.BatchSize, s.Eval.SkipFinal, s.Checkpoint.Dir = cifarlib.ArchCNN, 2, 16, true, run10
	if _, err := training.Train(context.Background(), s, training.Env{Train: train10, Backend: backend, Progress: training.ProgressOff}); err != nil {
		panic(err)
	}

	m100, _ := cifarlib.NewModel(c100, cifarlib.ArchCNN).Done()
	_, err := training.LoadCheckpointInto(run10, m100, backend)
	var mismatch *checkpoints.ShapeMismatchError
	if errors.As(err, &mismatch) {
		fmt.Println("plain load:", mismatch.Variable, mismatch.Saved, "->", mismatch.Model)
	}

	s.Data.Spec, s.Checkpoint.Dir = c100, ""
	s.Transfer = training.TransferSettings{From: run10, BackboneLearningRate: 0.0001}
	res, err := training.Train(context.Background(), s, training.Env{Train: train100, Backend: backend, Progress: training.ProgressOff})
	if err != nil {
		panic(err)
	}
	r := res.Transfer
	fmt.Println("model:", res.Model, "head:", res.HeadWidth, "steps:", res.StartStep, "->", res.EndStep)
	fmt.Println("carried:", len(r.Carried), "variables; re-initialised:", r.Reinitialized[1].Path, r.Reinitialized[1].FromShape, "->", r.Reinitialized[1].Shape)
	fmt.Println("learning rates: head", r.LearningRate, "backbone", r.BackboneLearningRate)
	// Output:
	// plain load: /cnn/head/dense/weights [1024 10] -> [1024 100]
	// model: cnn head: 100 steps: 0 -> 2
	// carried: 6 variables; re-initialised: /cnn/head/dense/weights [1024 10] -> [1024 100]
	// learning rates: head 0.001 backbone 0.0001
}
