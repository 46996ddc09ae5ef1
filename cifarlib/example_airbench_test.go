package cifarlib_test

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// airbench94 for CIFAR-100: the factory sizes its head from the dataset, and a fresh run sets
// its whitening layer from the first training images before the first step.
func ExampleModel_InitWhitening() {
	backend, err := backends.New("go")
	if err != nil {
		panic(err)
	}
	spec := data.CIFAR100(data.LabelsFine)
	m, err := cifarlib.NewModel(spec, cifarlib.ArchAirbench94).Backend(backend).Done()
	if err != nil {
		panic(err)
	}
	train, err := data.SynthesizeRecords(spec, data.SplitTrain, data.SynthOptions{Seed: 1, TrainSize: 64, TestSize: 1})
	if err != nil {
		panic(err)
	}
	store := model.NewStore()
	if err := m.InitWhitening(store, train); err != nil { // the first 5000 images (here all 64)
		panic(err)
	}
	v := store.GetVariable(cifarlib.AirbenchWhiteningVariable)
	value, _ := v.Value()
	w := tensors.MustCopyFlatData[float32](value)
	fmt.Println(m, v.Path(), value.Shape().Dimensions, "trainable:", v.Trainable)
	fmt.Println("filter 12 is filter 0 negated:", w[12] == -w[0])
	s, err := cifarlib.Summarize(m, backend, 1)
	if err != nil {
		panic(err)
	}
	fmt.Print(s)
	// Output:
	// airbench94 for cifar100 (100 classes) /airbench94/whiten/conv/weights [2 2 3 24] trainable: false
	// filter 12 is filter 0 negated: true
	// Model: airbench94 for cifar100 (100 classes)
	// --------------------------------------
	// Layer    Output shape           Params
	// --------------------------------------
	// input    [1, 32, 32, 3]              0
	// whiten   [1, 31, 31, 24]            24
	// block1   [1, 15, 15, 64]        50,816
	// block2   [1, 7, 7, 256]        737,792
	// block3   [1, 3, 3, 256]      1,180,160
	// pool     [1, 1, 1, 256]              0
	// flatten  [1, 256]                    0
	// head     [1, 100]               25,600
	// --------------------------------------
	// Total params: 1,994,392
	// Non-trainable (batch-norm statistics and fixed weights): 4,896
	// head: 100 outputs = 100 classes: OK
}
