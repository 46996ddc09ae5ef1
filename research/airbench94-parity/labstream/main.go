// Command labstream writes the lab's airbench94 training batches to a file, as the training
// loop draws them: the data set cifarlib's trainer makes for `cifarlab train --recipe
// airbench94 --seed S` (batch 1024, shuffled from the seed, the last partial batch dropped,
// airbench's alternating flip and 2-pixel reflect translation), batch after batch, for the
// given number of epochs.
//
// research/airbench94-parity/airbench_cpu.py --replay FILE trains airbench's own code on those batches in
// place of its loader's draws: with the same initial weights and the same batches, a
// difference in accuracy can only come from the training code; with the same weights and
// code, only from the batches.
//
//	go run ./research/airbench94-parity/labstream --data /work/c10real --seed 0 --out /tmp/lab-s0.batches
//
// The file is the batches one after another, each BATCH float32 images (NHWC 32x32x3,
// normalised as the lab normalises them, little-endian) followed by BATCH int32 labels. A
// 2-epoch stream of the 20k training images is 38 batches, 478 MB.
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/internal/atomicfile"
)

func main() {
	dataDir := flag.String("data", "", "the lab's data folder (the binary layout of CIFAR-10)")
	seed := flag.Int64("seed", 0, "the training seed (cifarlab train --seed)")
	epochs := flag.Int("epochs", 2, "epochs of batches to write")
	batch := flag.Int("batch", 1024, "batch size (airbench94's is 1024)")
	out := flag.String("out", "", "the file to write (atomically)")
	flag.Parse()
	if *dataDir == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "labstream: --data and --out are required")
		os.Exit(2)
	}
	n, err := write(*dataDir, *seed, *epochs, *batch, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "labstream:", err)
		os.Exit(1)
	}
	fmt.Printf("labstream: %d batches of %d (seed %d, %d epochs) in %s\n", n, *batch, *seed, *epochs, *out)
}

// write writes the stream to out atomically (internal/atomicfile) and returns the number of
// batches.
func write(dataDir string, seed int64, epochs, batch int, out string) (int, error) {
	train, _, synthetic, err := data.LoadPrepared(dataDir, data.CIFAR10(), data.SynthOptions{})
	if err != nil {
		return 0, err
	}
	if synthetic {
		return 0, fmt.Errorf("%s holds no real CIFAR-10 (LoadPrepared made a synthetic stand-in)", dataDir)
	}
	// The options of training.Trainer.runSteps for the airbench94 recipe.
	ds, err := data.NewDataset("train", train, data.DatasetOptions{BatchSize: batch, Shuffle: true, Seed: seed,
		Epochs: epochs, DropRemainder: true, Augment: true, Augmentation: data.AugmentAltFlip})
	if err != nil {
		return 0, err
	}
	n := 0
	err = atomicfile.WriteFile(out, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 1<<20)
		for hb, err := range ds.HostBatches() {
			if err != nil {
				return err
			}
			if err := binary.Write(w, binary.LittleEndian, hb.Images); err != nil {
				return err
			}
			if err := binary.Write(w, binary.LittleEndian, hb.Labels); err != nil {
				return err
			}
			n++
		}
		return w.Flush()
	})
	return n, err
}
