// Command transfer measures what carrying a trained model to another dataset is worth
// (cifarlib's training.Config.From): a model trained on CIFAR-10, then, for the same number of steps
// on CIFAR-100 (fine labels), fine-tuned against trained from scratch, and a linear probe (only
// the head trains) on the trained backbone against one on a random backbone (the seed's, frozen).
// It reports the test accuracy (top-1 and top-5) of each on the whole test split, per seed.
//
// Run it from the repository root:
//
//	go run ./bench/transfer                                   # XLA CPU, cnn, synthetic data, seeds 1,2,3
//	go run ./bench/transfer -data ~/.cache/cifarlab            # the real CIFAR-10 and CIFAR-100 there
//	go run ./bench/transfer -model resnet20 -source-steps 400 -steps 200
//
// Without -data the splits are cifarlib's synthetic stand-ins (SynthesizeRecords: 5000 training
// and 1000 test images per dataset), which say how the recipes compare mechanically, not what
// they give on real images. -json appends one JSON line per run.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// Result is one training run on the target dataset.
type Result struct {
	Seed     int64   `json:"seed"`
	Recipe   string  `json:"recipe"`
	Steps    int     `json:"steps"`
	Accuracy float64 `json:"test_accuracy"`
	TopK     float64 `json:"test_top5"`
	Seconds  float64 `json:"seconds"`
}

func main() {
	backendName := flag.String("backend", backends.CPU, "backend: cpu (XLA CPU), go or cuda")
	arch := flag.String("model", cifarlib.ArchCNN, "architecture: cnn, resnet20 or resnet18")
	dataDir := flag.String("data", "", "folder with the real CIFAR-10 and CIFAR-100 (default: synthetic data in memory)")
	sourceSteps := flag.Int("source-steps", 400, "training steps of the CIFAR-10 source run")
	steps := flag.Int("steps", 200, "training steps of each CIFAR-100 run")
	batch := flag.Int("batch", 64, "batch size")
	lr := flag.Float64("lr", 0.001, "Adam learning rate (the head's, and the scratch run's)")
	backboneLR := flag.Float64("backbone-lr", 0.0003, "the backbone's learning rate when fine-tuning")
	seedsFlag := flag.String("seeds", "1,2,3", "comma-separated seeds (each: its own source run and target runs)")
	asJSON := flag.Bool("json", false, "print one JSON line per run instead of the table")
	flag.Parse()
	if err := run(*backendName, *arch, *dataDir, *sourceSteps, *steps, *batch, *lr, *backboneLR, *seedsFlag, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "transfer:", err)
		os.Exit(1)
	}
}

func run(backendName, arch, dataDir string, sourceSteps, steps, batch int, lr, backboneLR float64, seedsFlag string, asJSON bool) error {
	backend, err := backends.New(backendName)
	if err != nil {
		return err
	}
	c10, c100 := data.CIFAR10(), data.CIFAR100(data.LabelsFine)
	splits := func(spec data.Spec) (train, test *data.Records, err error) {
		if dataDir != "" {
			if train, err = data.LoadSplit(dataDir, spec, data.SplitTrain); err != nil {
				return nil, nil, err
			}
			test, err = data.LoadSplit(dataDir, spec, data.SplitTest)
			return train, test, err
		}
		opts := data.SynthOptions{Seed: 1, TrainSize: 5000, TestSize: 1000}
		if train, err = data.SynthesizeRecords(spec, data.SplitTrain, opts); err != nil {
			return nil, nil, err
		}
		test, err = data.SynthesizeRecords(spec, data.SplitTest, opts)
		return train, test, err
	}
	train10, test10, err := splits(c10)
	if err != nil {
		return err
	}
	train100, test100, err := splits(c100)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "bench-transfer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	data := "synthetic (cifarlib.SynthesizeRecords, 5000 train / 1000 test per dataset)"
	if dataDir != "" {
		data = "real, from " + dataDir
	}
	if !asJSON {
		fmt.Printf("backend %s, model %s, batch %d, Adam lr %g (backbone %g when fine-tuning), source: %d steps on cifar10, "+
			"target: %d steps on cifar100; data %s\n\n", backends.Name(backend), arch, batch, lr, backboneLR, sourceSteps, steps, data)
		fmt.Println("| seed | source cifar10 test acc | recipe | cifar100 test top-1 | top-5 | time |")
		fmt.Println("|---:|---:|---|---:|---:|---:|")
	}
	for _, f := range strings.Split(seedsFlag, ",") {
		seed, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return fmt.Errorf("-seeds %q: %w", seedsFlag, err)
		}
		src := filepath.Join(tmp, fmt.Sprintf("cifar10-seed%d", seed))
		source, err := training.Train(context.Background(), training.Config{Spec: c10, Model: arch, Backend: backend,
			TrainRecords: train10, TestRecords: test10, Steps: sourceSteps, BatchSize: batch, Seed: seed, LearningRate: lr,
			CheckpointDir: src, Progress: training.ProgressOff})
		if err != nil {
			return err
		}
		for _, r := range []struct {
			name string
			cfg  training.Config
		}{
			{"fine-tuned from cifar10", training.Config{From: src, BackboneLearningRate: backboneLR}},
			{"from scratch", training.Config{}},
			{"linear probe, trained backbone", training.Config{From: src, Freeze: training.FreezeBackbone}},
			{"linear probe, random backbone", training.Config{Freeze: training.FreezeBackbone}},
		} {
			cfg := r.cfg
			cfg.Spec, cfg.Model, cfg.Backend, cfg.TrainRecords, cfg.TestRecords = c100, arch, backend, train100, test100
			cfg.Steps, cfg.BatchSize, cfg.Seed, cfg.LearningRate, cfg.Progress = steps, batch, seed, lr, training.ProgressOff
			start := time.Now()
			res, err := training.Train(context.Background(), cfg)
			if err != nil {
				return fmt.Errorf("%s (seed %d): %w", r.name, seed, err)
			}
			out := Result{Seed: seed, Recipe: r.name, Steps: steps, Accuracy: res.Eval.Accuracy, TopK: res.Eval.TopKAccuracy,
				Seconds: time.Since(start).Seconds()}
			if asJSON {
				line, _ := json.Marshal(out)
				fmt.Println(string(line))
				continue
			}
			fmt.Printf("| %d | %.1f%% | %s | %.1f%% | %.1f%% | %.0f s |\n", seed, 100*source.Eval.Accuracy, r.name,
				100*out.Accuracy, 100*out.TopK, out.Seconds)
		}
	}
	return nil
}
