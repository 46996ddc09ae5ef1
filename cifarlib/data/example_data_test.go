package data_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// A notebook's data in a few lines: real CIFAR-100 if it is in the data folder (verified or
// not), synthetic data in the same format otherwise.
func ExampleLoadPrepared() {
	root, _ := os.MkdirTemp("", "cifarlab-example-")
	defer os.RemoveAll(root)

	spec := data.CIFAR100(data.LabelsFine)
	train, test, synthetic, err := data.LoadPrepared(root, spec, data.SynthOptions{Seed: 1, TrainSize: 200, TestSize: 100})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("synthetic:", synthetic)
	fmt.Println("train:", train.Len(), "test:", test.Len(), "classes:", spec.NumClasses)
	hist := train.LabelHistogram()
	fmt.Println("examples of class 0 (apple):", hist[0], "of class 99 (worm):", hist[99])
	// Output:
	// synthetic: true
	// train: 200 test: 100 classes: 100
	// examples of class 0 (apple): 2 of class 99 (worm): 2
}

// Synthesize writes files in the real binary format, which LoadSplit reads back.
func ExampleSynthesize() {
	root, _ := os.MkdirTemp("", "cifarlab-example-")
	defer os.RemoveAll(root)

	spec := data.CIFAR10()
	err := data.Synthesize(root, spec, data.SynthOptions{Seed: 7, TrainSize: 500, TestSize: 100, LabelNoise: 0.1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range spec.TrainFiles {
		fi, _ := os.Stat(root + "/" + spec.Dir + "/" + name)
		fmt.Println(name, fi.Size()/int64(spec.RecordBytes()), "records")
	}
	test, _ := data.LoadSplit(root, spec, data.SplitTest)
	fmt.Println("test labels per class:", test.LabelHistogram())
	// Output:
	// data_batch_1.bin 100 records
	// data_batch_2.bin 100 records
	// data_batch_3.bin 100 records
	// data_batch_4.bin 100 records
	// data_batch_5.bin 100 records
	// test labels per class: [10 10 10 10 10 10 10 10 10 10]
}

// A Dataset feeds GoMLX's train.Loop and train.Trainer: float32 [B, 32, 32, 3] images and
// int32 [B, 1] labels. Check is the place for a host-side label guard.
func ExampleNewDataset() {
	spec := data.CIFAR100(data.LabelsCoarse)
	recs, _ := data.SynthesizeRecords(spec, data.SplitTrain, data.SynthOptions{TrainSize: 100})

	ds, err := data.NewDataset("train", recs, data.DatasetOptions{
		BatchSize: 32, Shuffle: true, Seed: 1, Epochs: 1, DropRemainder: true, Augment: true,
		Check: func(b *data.HostBatch) error {
			for _, l := range b.Labels {
				if l >= 20 {
					return fmt.Errorf("label %d does not fit a 20-way head", l)
				}
			}
			return nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for batch, err := range ds.Iter() {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(batch.Inputs[0].Shape(), batch.Labels[0].Shape())
		_ = batch.Finalize()
	}
	// Output:
	// (Float32)[32, 32, 32, 3] (Int32)[32, 1]
	// (Float32)[32, 32, 32, 3] (Int32)[32, 1]
	// (Float32)[32, 32, 32, 3] (Int32)[32, 1]
}

// Bad data gets an error naming the file, the record and the byte offset.
func ExampleReadRecords() {
	record := make([]byte, data.CIFAR10().RecordBytes())
	record[0] = 57 // a CIFAR-100 fine label in a CIFAR-10 file
	_, err := data.ReadRecords(bytes.NewReader(record), "data_batch_1.bin", data.CIFAR10())
	fmt.Println(err)
	fmt.Println(errors.Is(err, data.ErrLabelRange))
	// Output:
	// data: data_batch_1.bin: record 0 at byte offset 0: label byte is 57, outside the cifar10 class range [0, 10); is this a CIFAR-100 file (or not a CIFAR file at all)? Use the dataset cifar100, CIFAR100(...), for CIFAR-100 data
	// true
}

// Download fetches, verifies and extracts the official archive into the data folder. On an
// offline machine its error says which file to copy where.
func ExampleDownload() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root := data.DefaultDir()
	spec := data.CIFAR10()
	if err := data.Download(ctx, root, spec, data.DownloadOptions{Progress: os.Stderr, Retries: 2}); err != nil {
		fmt.Println(err)
		return
	}
	train, _ := data.LoadSplit(root, spec, data.SplitTrain)
	fmt.Println(train.Len())
}

// AugmentAltFlip is airbench's training augmentation: a random pre-flip drawn once from the
// Seed, a random reflect-padded translation of up to Translate pixels every epoch, and every
// image mirrored on odd epochs. Like the default scheme, it is reproducible from Seed and the
// epoch, so a resumed run sees the same images.
func ExampleAugmentation() {
	spec := data.CIFAR10()
	recs, _ := data.SynthesizeRecords(spec, data.SplitTrain, data.SynthOptions{TrainSize: 100})
	mode, err := data.ParseAugmentation("altflip-translate") // e.g. from a flag
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := data.DatasetOptions{BatchSize: 32, Shuffle: true, Seed: 1, Epochs: 2, DropRemainder: true,
		Augment: true, Augmentation: mode, Translate: data.DefaultTranslate}
	ds, err := data.NewDataset("train", recs, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	var first []float32
	for b, err := range ds.HostBatches() {
		if err != nil {
			fmt.Println(err)
			return
		}
		if b.Number == 0 {
			first = b.Images
		}
		fmt.Printf("epoch %d batch %d: %d images\n", b.Epoch, b.Number, b.Size())
	}
	ds.Reset()
	for b := range ds.HostBatches() {
		fmt.Println("after Reset, the first batch again:", slices.Equal(first, b.Images))
		break
	}

	opts.Augmentation = "mixup"
	_, err = data.NewDataset("train", recs, opts)
	fmt.Println(err)
	// Output:
	// epoch 0 batch 0: 32 images
	// epoch 0 batch 1: 32 images
	// epoch 0 batch 2: 32 images
	// epoch 1 batch 3: 32 images
	// epoch 1 batch 4: 32 images
	// epoch 1 batch 5: 32 images
	// after Reset, the first batch again: true
	// data: dataset "train": unknown augmentation "mixup": use "crop-flip" (random crop with 4-pixel padding and random flip, the default) or "altflip-translate" (airbench's alternating flip and reflect-padded translation)
}
