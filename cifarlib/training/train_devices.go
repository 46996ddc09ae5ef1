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

// stepRunner is the devices part of a Trainer: it runs the training steps on one device
// (oneDevice) or with each global batch sharded across several (*trainDevices).
type stepRunner interface {
	// numDevices is the number of devices the steps run on.
	numDevices() int
	// run trains steps steps of t's step dataset. A cancelled ctx stops after the current step.
	run(ctx context.Context, t *Trainer, steps int) error
	// count sets res's Interrupted and zero-loss counts for the steps steps trained from ds.
	count(res *Result, ds *stepDataset, steps, batchSize int)
}

// openDevices returns the backend of plan p (the Env's, else the one its Programs keeps,
// else one created by name for Compute.Devices devices) and the devices part that trains on it.
func openDevices(p *plan, env Env) (compute.Backend, stepRunner, error) {
	b := env.Backend
	if b == nil {
		var err error
		if b, err = env.Programs.backendFor(p.Compute.Backend, p.Compute.Devices); err != nil {
			return nil, nil, devicesConfigError(err)
		}
	}
	n, err := backends.ResolveDevices(b, p.Compute.Devices)
	if err != nil {
		return nil, nil, devicesConfigError(err)
	}
	if n < 2 {
		return b, oneDevice{}, nil
	}
	if err := backends.CheckBatchDivisible("Data.BatchSize", p.Data.BatchSize, n); err != nil {
		return nil, nil, err
	}
	mesh, err := backends.NewDeviceMesh(n)
	if err != nil {
		return nil, nil, err
	}
	return b, &trainDevices{n: n, mesh: mesh}, nil
}

// oneDevice trains on one device, with GoMLX's Loop.RunEpochs over the step dataset.
type oneDevice struct{}

func (oneDevice) numDevices() int { return 1 }

func (oneDevice) run(_ context.Context, t *Trainer, _ int) error {
	_, err := t.loop.RunEpochs(t.steps, 1)
	return err
}

func (oneDevice) count(res *Result, ds *stepDataset, _, _ int) {
	res.Interrupted = ds.interrupted
	res.ZeroLoss.Seen, res.ZeroLoss.OutOfRange = ds.seen, ds.outOfRange
}

// trainDevices is the data-parallel state of a Trainer over n >= 2 devices.
type trainDevices struct {
	n     int
	mesh  *distributed.DeviceMesh
	split *shardSplitter
	// interrupted is set when the context was cancelled and the loop stopped after a step.
	interrupted bool
}

func (d *trainDevices) numDevices() int { return d.n }

// run trains steps steps of t's step dataset, each global batch sharded across the devices,
// with GoMLX's Loop.RunSteps over a DistributedAccumulator (which makes the loop call
// Trainer.DistributedTrainStep). A cancelled ctx stops the loop after the current step.
func (d *trainDevices) run(ctx context.Context, t *Trainer, steps int) error {
	d.split = &shardSplitter{inner: t.steps, devices: d.n, headWidth: t.model.NumClasses}
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
	if err != nil && cifarlib.GuardErrorOf(err) == err && t.hookErr == nil && t.steps.interrupted {
		// Cancelled between a step's hooks and the next batch: the data ended first.
		d.interrupted = true
		return nil
	}
	return err
}

// count sets the training examples fed to the first steps steps of a distributed run and how
// many of them had labels outside the head: the distributed dataset reads ahead, so ds's own
// counts are past what was trained.
func (d *trainDevices) count(res *Result, ds *stepDataset, steps, batchSize int) {
	res.Interrupted = ds.interrupted || d.interrupted
	res.ZeroLoss.Seen, res.ZeroLoss.OutOfRange = 0, 0
	if d.split != nil {
		res.ZeroLoss.Seen, res.ZeroLoss.OutOfRange = int64(steps)*int64(batchSize), d.split.outOfRange(steps)
	}
}

// devicesConfigError reports the backends' *DevicesValueError for Compute.Devices as a
// *ConfigError of that field; other errors pass unchanged.
func devicesConfigError(err error) error {
	if ve := (*backends.DevicesValueError)(nil); errors.As(err, &ve) {
		return &ConfigError{Field: "Compute.Devices", Value: ve.Value, Reason: ve.Fix}
	}
	return err
}
