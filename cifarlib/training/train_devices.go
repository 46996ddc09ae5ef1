package training

import (
	"context"
	"errors"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/distributed"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/train"
)

// trainDevices is the data-parallel state of a Trainer over n >= 2 devices.
type trainDevices struct {
	n     int
	mesh  *distributed.DeviceMesh
	split *shardSplitter
	// interrupted is set when the context was cancelled and the loop stopped after a step.
	interrupted bool
}

// newTrainDevices resolves cfg.Devices on backend b and checks that the batch splits evenly;
// it returns nil for one device.
func newTrainDevices(b compute.Backend, cfg *Config) (*trainDevices, error) {
	n, err := backends.ResolveDevices(b, cfg.Devices)
	if err != nil || n < 2 {
		return nil, devicesConfigError(err)
	}
	if err := backends.CheckBatchDivisible("BatchSize", cfg.BatchSize, n); err != nil {
		return nil, err
	}
	mesh, err := backends.NewDeviceMesh(n)
	if err != nil {
		return nil, err
	}
	return &trainDevices{n: n, mesh: mesh}, nil
}

// numDevices returns the number of devices a Trainer trains on (1 without data parallelism).
func (d *trainDevices) numDevices() int {
	if d == nil {
		return 1
	}
	return d.n
}

// runDistributed trains steps steps of t.data, each global batch sharded across the devices,
// with GoMLX's Loop.RunSteps over a DistributedAccumulator (which makes the loop call
// Trainer.DistributedTrainStep). A cancelled ctx stops the loop after the current step.
func (t *Trainer) runDistributed(ctx context.Context, steps int) error {
	d := t.dist
	d.split = &shardSplitter{inner: t.data, devices: d.n, headWidth: t.model.NumClasses}
	ds, err := newAccumulator(t.backend, d.mesh, d.split)
	if err != nil {
		return err
	}
	if err := backends.ReplicateUnsharded(t.store, d.mesh); err != nil {
		return err
	}
	t.loop.OnStep("cifarlib: interrupt", 1000, func(loop *train.Loop, _ []*tensors.Tensor) error {
		if ctx.Err() != nil && loop.EndStep > loop.LoopStep+1 {
			// Loop.RunSteps reads EndStep after each step: it ends after this one, cleanly
			// (its OnEnd hooks, such as the progress bar's, run).
			loop.EndStep = loop.LoopStep + 1
			d.interrupted = true
		}
		return nil
	})
	_, err = t.loop.RunSteps(ds, steps)
	if err != nil && cifarlib.GuardErrorOf(err) == err && t.hookErr == nil && t.data.interrupted {
		// Cancelled between a step's hooks and the next batch: the data ended first.
		d.interrupted = true
		return nil
	}
	return err
}

// zeroLossCounts returns the training examples fed to the first steps steps of a distributed
// run and how many of them had labels outside the head.
func (d *trainDevices) zeroLossCounts(steps, batchSize int) (seen, outOfRange int64) {
	if d.split == nil {
		return 0, 0
	}
	return int64(steps) * int64(batchSize), d.split.outOfRange(steps)
}

// devicesConfigError reports the backends' *DevicesValueError for Config.Devices as a
// *ConfigError of the Devices field; other errors pass unchanged.
func devicesConfigError(err error) error {
	if ve := (*backends.DevicesValueError)(nil); errors.As(err, &ve) {
		return &ConfigError{Field: "Devices", Value: ve.Value, Reason: ve.Fix}
	}
	return err
}
