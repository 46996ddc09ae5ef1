package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

func init() {
	register(command{
		name:    "synth",
		summary: "write a synthetic, learnable CIFAR-10/100 dataset in the real binary format",
		run:     runSynth,
	})
}

func runSynth(args []string, stdout io.Writer) error {
	fs := newFlagSet("synth", "--dataset cifar10|cifar100 --out DIR [--train N] [--test N] [--seed S] [--noise F]", stdout)
	dataset := fs.String("dataset", "", "dataset to imitate: cifar10 or cifar100 (required)")
	out := fs.String("out", "", "output `DIR`; files go to DIR/cifar-10-batches-bin or DIR/cifar-100-binary (required)")
	train := fs.Int("train", data.DefaultSynthTrainSize, "number of training records")
	test := fs.Int("test", data.DefaultSynthTestSize, "number of test records")
	seed := fs.Int64("seed", 1, "random seed: the same seed and sizes give identical files")
	noise := fs.Float64("noise", 0, "fraction of training labels replaced by a wrong class, in [0, 1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *dataset == "" {
		return &exitError{code: 2, err: errors.New("--dataset is required: cifar10 or cifar100")}
	}
	if *out == "" {
		return &exitError{code: 2, err: errors.New("--out is required: the folder to write the dataset to")}
	}
	if *train <= 0 || *test <= 0 {
		return &exitError{code: 2, err: fmt.Errorf("--train %d and --test %d must be positive", *train, *test)}
	}
	spec, err := data.SpecByName(*dataset, "")
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	opts := data.SynthOptions{Seed: *seed, TrainSize: *train, TestSize: *test, LabelNoise: *noise}
	if err := data.Synthesize(*out, spec, opts); err != nil {
		return err
	}
	files := "1 file"
	if n := len(spec.TrainFiles); n != 1 {
		files = fmt.Sprintf("%d files", n)
	}
	fmt.Fprintf(stdout, "wrote synthetic %s to %s: %d train records in %s, %d test records (seed %d, label noise %g)\n",
		spec.Name, filepath.Join(*out, spec.Dir), *train, files, *test, *seed, *noise)
	return nil
}
