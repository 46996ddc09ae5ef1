package cifarlib

import (
	"iter"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// benchTrainSteps runs b.N training steps of the small CNN at batch 32 on the go backend, with
// the host guard in the Dataset when hostGuard is set, and the given loss guard mode.
func benchTrainSteps(b *testing.B, hostGuard bool, mode GuardMode) {
	spec := data.CIFAR10()
	recs, err := data.SynthesizeRecords(spec, data.SplitTrain, data.SynthOptions{Seed: 1, TrainSize: 256, TestSize: 10})
	if err != nil {
		b.Fatal(err)
	}
	m, err := NewModel(spec, ArchCNN).Backend(goBackend()).Done()
	if err != nil {
		b.Fatal(err)
	}
	opts := data.DatasetOptions{BatchSize: 32, Shuffle: true, Seed: 1, DropRemainder: true}
	if hostGuard {
		opts.Check = m.HostGuard()
	}
	ds, err := data.NewDataset("bench", recs, opts)
	if err != nil {
		b.Fatal(err)
	}
	next, stop := iter.Pull2(ds.Iter())
	defer stop()
	trainer := train.NewTrainer(goBackend(), model.NewStore(), m.ModelFn, m.LossFn(mode),
		optimizer.Adam().Done(), nil, nil)
	step := func() {
		batch, err, ok := next()
		if !ok || err != nil {
			b.Fatalf("dataset: ok=%v err=%v", ok, err)
		}
		if _, err := trainer.TrainStep(batch); err != nil {
			b.Fatal(err)
		}
		if mode == GuardAll {
			if err := checkDeviceLabels(trainer.Store(), -1); err != nil {
				b.Fatal(err)
			}
		}
	}
	step() // compile
	b.ResetTimer()
	for range b.N {
		step()
	}
}

// BenchmarkTrainStepHostGuard compares a small-CNN train step (batch 32, go backend) with and
// without the host guard (target: < 1% overhead), and with the loss's in-graph guard on or off.
// Run: go test -run XXX -bench TrainStepHostGuard -benchtime 5x ./cifarlib
func BenchmarkTrainStepHostGuard(b *testing.B) {
	b.Run("host=off/loss=off", func(b *testing.B) { benchTrainSteps(b, false, GuardOff) })
	b.Run("host=on/loss=off", func(b *testing.B) { benchTrainSteps(b, true, GuardOff) })
	b.Run("host=on/loss=all", func(b *testing.B) { benchTrainSteps(b, true, GuardAll) })
}

// BenchmarkCheckLabels measures the host guard alone on a batch of 128 labels.
func BenchmarkCheckLabels(b *testing.B) {
	labels := make([]int32, 128)
	for i := range labels {
		labels[i] = int32(i % 10)
	}
	b.ReportAllocs()
	for range b.N {
		if err := CheckLabels(labels, 10, 0, nil); err != nil {
			b.Fatal(err)
		}
	}
}
