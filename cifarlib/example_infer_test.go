package cifarlib_test

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// The story's silent failure in one call: a 10-output head on CIFAR-100 labels. Every example
// whose label is 10 or more gets a loss of exactly 0 from GoMLX's plain loss, while the guarded
// loss refuses the batch.
func ExampleModel_Losses() {
	backend, err := backends.New(backends.Go)
	if err != nil {
		fmt.Println(err)
		return
	}
	spec := data.CIFAR100(data.LabelsFine)
	recs, _ := data.SynthesizeRecords(spec, data.SplitTest, data.SynthOptions{Seed: 1, TestSize: 64})
	batch, _ := recs.Batch(0, 64) // images, labels = next(iter(loader))
	m, _ := cifarlib.NewModel(spec, cifarlib.ArchLinear).Head(10).Backend(backend).Done()
	losses, err := m.Losses(backend, nil, batch) // fresh weights
	if err != nil {
		fmt.Println(err)
		return
	}
	beyond, zero := losses.Beyond()
	fmt.Printf("%d of %d labels are >= 10; %d of them have a loss of exactly 0\n", beyond, batch.Size(), zero)
	fmt.Println("guarded loss:", losses.GuardErr)
	// Output:
	// 54 of 64 labels are >= 10; 54 of them have a loss of exactly 0
	// guarded loss: model head has 10 outputs but dataset cifar100 has 100 classes (head overridden to 10): build the model with cifarlib's factory for cifar100, or set the head to 100
}
