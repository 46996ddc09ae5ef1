package cifarlib_test

import (
	"errors"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// The model factory sizes the head from the dataset; an override is recorded.
func ExampleNewModel() {
	m, err := cifarlib.NewModel(data.CIFAR100(data.LabelsFine), cifarlib.ArchCNN).Done()
	if err != nil {
		panic(err)
	}
	fmt.Println(m, "->", m.NumClasses, "outputs")
	bug, _ := cifarlib.NewModel(data.CIFAR100(data.LabelsFine), cifarlib.ArchCNN).Head(10).Done()
	fmt.Println(bug)
	// Output:
	// cnn for cifar100 (100 classes) -> 100 outputs
	// cnn for cifar100 (100 classes), head overridden to 10
}

// Training a 10-output model on CIFAR-100 labels fails at graph build, before any computation,
// with the static guard's error; GoMLX's plain loss (GuardOff) would train silently.
func ExampleModel_LossFn() {
	backend, err := backends.New("go")
	if err != nil {
		panic(err)
	}
	m, _ := cifarlib.NewModel(data.CIFAR100(data.LabelsFine), cifarlib.ArchLinear).Head(10).Done()
	trainer := train.NewTrainer(backend, model.NewStore(), m.ModelFn, m.LossFn(cifarlib.GuardAll),
		optimizer.StochasticGradientDescent(), nil, nil)
	images := make([]float32, 2*32*32*3)
	_, err = trainer.TrainStep(train.Batch{
		Inputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(images, 2, 32, 32, 3)},
		Labels: []*tensors.Tensor{tensors.FromValue([][]int32{{57}, {3}})},
	})
	var mismatch *cifarlib.HeadMismatchError
	if errors.As(err, &mismatch) {
		fmt.Println(mismatch)
	}
	// Output:
	// model head has 10 outputs but dataset cifar100 has 100 classes (head overridden to 10): build the model with cifarlib's factory for cifar100, or set the head to 100
}

// The host guard checks a whole batch and names every bad label.
func ExampleCheckLabels() {
	labels := []int32{3, 57, -1, 0, 10, 9}
	err := cifarlib.CheckLabels(labels, 10, 0, []int{40, 41, 42, 43, 44, 45})
	fmt.Println(err)
	// Output:
	// batch 0: 3 of 6 labels out of range [0, 10): position 1 (example 41) label 57, position 2 (example 42) label -1, position 4 (example 44) label 10: labels must be class indices in [0, 10); the labels come from a dataset with more classes than the model's head (e.g. CIFAR-100 labels for a 10-class model): build the model and the dataset from the same Spec
}

// Shape inspection: a per-layer table like torchsummary.
func ExampleSummarize() {
	backend, _ := backends.New("go")
	m, _ := cifarlib.NewModel(data.CIFAR10(), cifarlib.ArchLinear).Done()
	s, err := cifarlib.Summarize(m, backend, 4)
	if err != nil {
		panic(err)
	}
	fmt.Print(s)
	// Output:
	// Model: linear for cifar10 (10 classes)
	// -------------------------------------
	// Layer    Output shape          Params
	// -------------------------------------
	// input    [4, 32, 32, 3]             0
	// flatten  [4, 3072]                  0
	// head     [4, 10]               30,730
	// -------------------------------------
	// Total params: 30,730
	// Non-trainable (batch-norm statistics): 0
	// head: 10 outputs = 10 classes: OK
}
