package nb_test

import (
	"fmt"
	"io"
	"os"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/cifarlab/cifarlab/cifarlib/nb"
)

// A notebook's cells share a Lab: one cell trains a named run with Fit, a later cell (a new
// program in GoNB) loads it with Load and computes with the trained weights.
func ExampleLab() {
	backend, err := backends.New(backends.Go)
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "lab-example")
	defer os.RemoveAll(dir)
	lab, err := nb.New(data.CIFAR100(data.LabelsFine), backend, dir) // synthetic data, generated once
	if err != nil {
		fmt.Println(err)
		return
	}
	nb.Output = io.Discard // Fit and Load print how long they took
	defer func() { nb.Output = nil }()

	s := lab.Settings() // the lab's dataset and architecture, the rest training.Defaults'
	s.Run.Steps, s.Data.BatchSize, s.Run.Seed, s.Eval.SkipFinal = 2, 16, 1, true
	res, err := lab.Fit("example", s)
	if err != nil {
		fmt.Println(err)
		return
	}
	run, err := lab.Load("example") // in a later cell
	if err != nil {
		fmt.Println(err)
		return
	}
	batch, _ := lab.Test.Batch(0, 4)
	logits, _ := run.Logits(batch.Images)
	fmt.Println("trained to step", res.EndStep)
	fmt.Println("loaded", run.Model)
	fmt.Println("logits", logits.Shape())
	// Output:
	// trained to step 2
	// loaded linear for cifar100 (100 classes)
	// logits (Float32)[4, 100]
}

// Outside a notebook, Show prints the plain-text form of what it would draw.
func ExampleShow() {
	recs := data.NewRecords(data.CIFAR10(), "five records", 5)
	copy(recs.RawLabels, []byte{3, 9, 0, 3, 7})
	nb.Show(recs.LabelStats(4)) // in a notebook: a histogram, labels >= 4 in red, with the caption
	// Output:
	// 5 labels (five records): 0..9, 4 of 10 classes present; 2 (40%) are >= the head's 4 outputs
	// data: cifar10, not known whether real or synthetic
}
