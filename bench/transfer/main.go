// Command transfer measures what carrying a trained model to another dataset is worth
// (cifarlib's training.Settings.Transfer.From): a model trained on a source dataset, then, for the same number
// of steps on a target dataset, fine-tuned against trained from scratch, and a linear probe (only
// the head trains) on the trained backbone against one on a random backbone (the seed's, frozen).
// It reports the loss of each target run's first step and its test accuracy (top-1, and top-5
// for CIFAR-100) on the whole test split, per seed.
//
// Two tasks (-task): cifar100, CIFAR-10 to CIFAR-100 (fine labels); animals-vehicles, CIFAR-10's
// six animal classes to its four vehicle classes, each relabelled 0..n-1 (split.go): a transfer
// between disjoint classes that real CIFAR-10 images alone support. -target-per-class keeps that
// many training images per vehicle class (the few-labels case transfer is for).
//
// Run it from the repository root:
//
//	go run ./bench/transfer                                   # XLA CPU, cnn, synthetic data, seeds 1,2,3
//	go run ./bench/transfer -data ~/.cache/cifarlab            # the real CIFAR-10 and CIFAR-100 there
//	go run ./bench/transfer -task animals-vehicles -data DIR -source-steps 1500 -steps 300 -target-per-class 200
//	go run ./bench/transfer -model resnet20 -source-steps 400 -steps 200
//
// Without -data the splits are cifarlib's synthetic stand-ins (data.SynthesizeRecords: 5000 training
// and 1000 test images per dataset), which say how the recipes compare mechanically, not what
// they give on real images. -json prints one JSON line per run instead of the table.
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
	"github.com/gomlx/compute"
)

// Result is one training run on the target dataset.
type Result struct {
	Seed     int64   `json:"seed"`
	Recipe   string  `json:"recipe"`
	Steps    int     `json:"steps"`
	Accuracy float64 `json:"test_accuracy"`
	TopK     float64 `json:"test_top5"`
	Seconds  float64 `json:"seconds"`
	// Loss1 is the loss of the first training step (the batch before its update).
	Loss1 float64 `json:"step1_loss"`
	// Evals are the test accuracies at the -eval-every steps, then at the end.
	Evals []float64 `json:"test_accuracy_curve,omitempty"`
}

func main() {
	backendName := flag.String("backend", backends.CPU, "backend: cpu (XLA CPU), go or cuda")
	arch := flag.String("model", cifarlib.ArchCNN, "architecture: cnn, resnet20 or resnet18")
	dataDir := flag.String("data", "", "folder with the real CIFAR-10 (and CIFAR-100 for -task cifar100); default: synthetic data in memory")
	sourceSteps := flag.Int("source-steps", 400, "training steps of the source run")
	steps := flag.Int("steps", 200, "training steps of each target run")
	batch := flag.Int("batch", 64, "batch size")
	lr := flag.Float64("lr", 0.001, "Adam learning rate (the head's, and the scratch run's)")
	backboneLR := flag.Float64("backbone-lr", 0.0003, "the backbone's learning rate when fine-tuning")
	seedsFlag := flag.String("seeds", "1,2,3", "comma-separated seeds (each: its own source run and target runs)")
	asJSON := flag.Bool("json", false, "print one JSON line per run instead of the table")
	task := flag.String("task", taskCIFAR100, "transfer task: "+taskCIFAR100+" (CIFAR-10 to CIFAR-100) or "+taskAnimalsVehicles+
		" (CIFAR-10's 6 animal classes to its 4 vehicle classes, real images with -data)")
	targetPerClass := flag.Int("target-per-class", 0, "training images per class of the target task (0: all)")
	evalEvery := flag.Int("eval-every", 0, "also evaluate each target run on the test split every this many steps (0: at the end only)")
	flag.Parse()
	b := bench{backendName: *backendName, arch: *arch, dataDir: *dataDir, task: *task, sourceSteps: *sourceSteps, steps: *steps,
		batch: *batch, lr: *lr, backboneLR: *backboneLR, targetPerClass: *targetPerClass, evalEvery: *evalEvery, asJSON: *asJSON}
	if err := b.run(*seedsFlag); err != nil {
		fmt.Fprintln(os.Stderr, "transfer:", err)
		os.Exit(1)
	}
}

// Transfer tasks (-task).
const (
	taskCIFAR100        = "cifar100"
	taskAnimalsVehicles = "animals-vehicles"
)

// bench holds the flags of one invocation.
type bench struct {
	backendName, arch, dataDir, task string
	sourceSteps, steps, batch        int
	lr, backboneLR                   float64
	targetPerClass, evalEvery        int
	asJSON                           bool
}

// taskData holds a task's source and target datasets.
type taskData struct {
	source, target          data.Spec
	train, test             *data.Records // source
	targetTrain, targetTest *data.Records
	description             string
	sourceName, targetName  string
}

// load returns the splits of the task: from b.dataDir when set, else synthesized in memory
// (data.SynthesizeRecords: 5000 training and 1000 test images per dataset).
func (b *bench) load() (*taskData, error) {
	split := func(spec data.Spec, s data.Split) (*data.Records, error) {
		if b.dataDir != "" {
			return data.LoadSplit(b.dataDir, spec, s)
		}
		return data.SynthesizeRecords(spec, s, data.SynthOptions{Seed: 1, TrainSize: 5000, TestSize: 1000})
	}
	d := &taskData{description: "synthetic (data.SynthesizeRecords, 5000 train / 1000 test per dataset)"}
	if b.dataDir != "" {
		d.description = "real, from " + b.dataDir
	}
	var err error
	switch b.task {
	case taskCIFAR100:
		d.source, d.target = data.CIFAR10(), data.CIFAR100(data.LabelsFine)
		if d.train, err = split(d.source, data.SplitTrain); err == nil {
			d.test, err = split(d.source, data.SplitTest)
		}
		if err == nil {
			d.targetTrain, err = split(d.target, data.SplitTrain)
		}
		if err == nil {
			d.targetTest, err = split(d.target, data.SplitTest)
		}
		if err == nil && b.targetPerClass > 0 {
			err = fmt.Errorf("-target-per-class works with -task %s", taskAnimalsVehicles)
		}
	case taskAnimalsVehicles:
		d.source, d.target = animals.spec(), vehicles.spec()
		var train, test *data.Records
		if train, err = split(data.CIFAR10(), data.SplitTrain); err == nil {
			test, err = split(data.CIFAR10(), data.SplitTest)
		}
		if err == nil {
			d.train, err = animals.subset(train, 0)
		}
		if err == nil {
			d.test, err = animals.subset(test, 0)
		}
		if err == nil {
			d.targetTrain, err = vehicles.subset(train, b.targetPerClass)
		}
		if err == nil {
			d.targetTest, err = vehicles.subset(test, 0)
		}
	default:
		err = fmt.Errorf("-task %q: use %s or %s", b.task, taskCIFAR100, taskAnimalsVehicles)
	}
	if err != nil {
		return nil, err
	}
	d.sourceName, d.targetName = d.source.ID(), d.target.ID()
	return d, nil
}

func (b *bench) run(seedsFlag string) error {
	backend, err := backends.New(b.backendName)
	if err != nil {
		return err
	}
	d, err := b.load()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "bench-transfer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	if !b.asJSON {
		fmt.Printf("backend %s, model %s, batch %d, Adam lr %g (backbone %g when fine-tuning), source: %d steps on %s "+
			"(%d train / %d test images), target: %d steps on %s (%d train / %d test images); data %s\n\n",
			backends.Name(backend), b.arch, b.batch, b.lr, b.backboneLR, b.sourceSteps, d.sourceName, d.train.Len(), d.test.Len(),
			b.steps, d.targetName, d.targetTrain.Len(), d.targetTest.Len(), d.description)
		fmt.Printf("| seed | source %s test acc | recipe | step-1 loss | %s test top-1 | top-5 | test acc every %d steps | time |\n",
			d.sourceName, d.targetName, b.evalEvery)
		fmt.Println("|---:|---:|---|---:|---:|---:|---|---:|")
	}
	for _, f := range strings.Split(seedsFlag, ",") {
		seed, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return fmt.Errorf("-seeds %q: %w", seedsFlag, err)
		}
		if err := b.runSeed(backend, d, tmp, seed); err != nil {
			return err
		}
	}
	return nil
}

// runSeed trains the source model of one seed into tmp, then each transfer recipe on the target
// task (runRecipe).
func (b *bench) runSeed(backend compute.Backend, d *taskData, tmp string, seed int64) error {
	src := filepath.Join(tmp, fmt.Sprintf("%s-seed%d", d.sourceName, seed))
	s := training.Defaults()
	s.Data.Spec, s.Model.Arch, s.Run.Steps, s.Data.BatchSize, s.Run.Seed = d.source, b.arch, b.sourceSteps, b.batch, seed
	s.Optimizer, s.Checkpoint.Dir = training.Adam{LearningRate: b.lr}, src
	source, err := training.Train(context.Background(), s, training.Env{Backend: backend, Train: d.train, Test: d.test,
		Progress: training.ProgressOff})
	if err != nil {
		return err
	}
	for _, r := range []struct {
		name     string
		transfer training.TransferSettings
	}{
		{"fine-tuned from " + d.sourceName, training.TransferSettings{From: src, BackboneLearningRate: b.backboneLR}},
		{"from scratch", training.TransferSettings{}},
		{"linear probe, trained backbone", training.TransferSettings{From: src, Freeze: training.FreezeBackbone}},
		{"linear probe, random backbone", training.TransferSettings{Freeze: training.FreezeBackbone}},
	} {
		if err := b.runRecipe(backend, d, seed, source.Eval.Accuracy, r.name, r.transfer); err != nil {
			return err
		}
	}
	return nil
}

// runRecipe trains one transfer recipe of one seed on the target task and prints its row (or
// its JSON line); sourceAccuracy is the source model's test accuracy.
func (b *bench) runRecipe(backend compute.Backend, d *taskData, seed int64, sourceAccuracy float64, name string, transfer training.TransferSettings) error {
	cfg := training.Defaults()
	cfg.Data.Spec, cfg.Model.Arch, cfg.Transfer = d.target, b.arch, transfer
	cfg.Run.Steps, cfg.Data.BatchSize, cfg.Run.Seed, cfg.Optimizer = b.steps, b.batch, seed, training.Adam{LearningRate: b.lr}
	cfg.Eval.Every, cfg.Eval.Examples = training.EvalOff, 0 // -eval-every 0: at the end only; else on the whole test split
	if b.evalEvery > 0 {
		cfg.Eval.Every = b.evalEvery
	}
	start := time.Now()
	res, err := training.Train(context.Background(), cfg, training.Env{Backend: backend, Train: d.targetTrain, Test: d.targetTest,
		Progress: training.ProgressOff})
	if err != nil {
		return fmt.Errorf("%s (seed %d): %w", name, seed, err)
	}
	out := Result{Seed: seed, Recipe: name, Steps: b.steps, Accuracy: res.Eval.Accuracy, TopK: res.Eval.TopKAccuracy,
		Seconds: time.Since(start).Seconds(), Loss1: res.History.Points[0].Loss}
	var curve []string
	for _, p := range res.History.Points {
		if p.Eval != nil {
			out.Evals = append(out.Evals, p.Eval.Accuracy)
			curve = append(curve, fmt.Sprintf("%.1f", 100*p.Eval.Accuracy))
		}
	}
	if b.asJSON {
		line, _ := json.Marshal(out)
		fmt.Println(string(line))
		return nil
	}
	top5 := "-"
	if res.Eval.TopK > 0 {
		top5 = fmt.Sprintf("%.1f%%", 100*out.TopK)
	}
	fmt.Printf("| %d | %.1f%% | %s | %.3f | %.1f%% | %s | %s | %.0f s |\n", seed, 100*sourceAccuracy, name,
		out.Loss1, 100*out.Accuracy, top5, strings.Join(curve, " "), out.Seconds)
	return nil
}
