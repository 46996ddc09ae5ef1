package training

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/stretchr/testify/require"
)

// devicesGuardRecords returns 8 CIFAR-10 records labelled 0, except those at the given
// positions, labelled 9.
func devicesGuardRecords(positions ...int) *data.Records {
	recs := data.NewRecords(data.CIFAR10(), "devices-guard-test", 8)
	for _, p := range positions {
		recs.RawLabels[p] = 9
	}
	return recs
}

// TestDevicesInGraphGuard: with the global batch of 8 sharded across 2 and 4 devices, labels
// made out of range on the device (a loss wrapper adds 1: 9 -> 10, outside the 10-class head)
// are counted on every shard and reported at their positions in the global batch, for a label
// on the last device's shard (position 6: device 1 of 2, device 3 of 4) and for one bad label
// on each shard.
func TestDevicesInGraphGuard(t *testing.T) {
	for _, n := range []int{2, 4} {
		for _, c := range []struct {
			name      string
			positions []int
		}{{"last shard", []int{6}}, {"every shard", []int{0, 3, 5, 7}}} {
			t.Run(fmt.Sprintf("%d/%s", n, c.name), func(t *testing.T) {
				backend := devicesTestBackend(t, n)
				m, err := cifarlib.NewModel(data.CIFAR10(), cifarlib.ArchLinear).Backend(backend).Done()
				require.NoError(t, err)
				guarded := m.LossFn(cifarlib.GuardAll)
				shifted := func(labels, logits []*graph.Node) *graph.Node {
					return guarded([]*graph.Node{graph.AddScalar(labels[0], 1)}, logits)
				}
				ds, err := data.NewDataset("train", devicesGuardRecords(c.positions...), data.DatasetOptions{BatchSize: 8, Epochs: 1})
				require.NoError(t, err)
				dds, err := newDistributedDataset(backend, ds, n)
				require.NoError(t, err)
				loop := train.NewLoop(train.NewTrainer(backend, model.NewStore(), m.ModelFn, shifted,
					optimizer.StochasticGradientDescent(), nil, nil))
				cifarlib.AttachDeviceGuard(loop)
				_, err = loop.RunSteps(dds, 1)
				var de *cifarlib.DeviceLabelError
				require.ErrorAs(t, err, &de)
				want := make([]data.BadLabel, len(c.positions))
				for i, p := range c.positions {
					want[i] = data.BadLabel{Position: p, Example: -1, Label: 10}
				}
				require.Equal(t, want, de.Bad)
				require.Equal(t, len(c.positions), de.NumBad)
				require.Equal(t, 8, de.BatchSize, "positions are in the global batch")
				require.Equal(t, 0, de.Step)
			})
		}
	}
}

// TestDevicesHostGuard: the host guard checks each global batch before it is cut into shards,
// so a bad label on the last device's shard is reported at its global position and example.
func TestDevicesHostGuard(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			backend := devicesTestBackend(t, n)
			m, err := cifarlib.NewModel(data.CIFAR100(data.LabelsFine), cifarlib.ArchLinear).Head(10).Done()
			require.NoError(t, err)
			recs := data.NewRecords(data.CIFAR100(data.LabelsFine), "devices-host-guard", 16)
			setFine := func(i, fine int) {
				recs.RawLabels[i*2], recs.RawLabels[i*2+1] = byte(data.CIFAR100CoarseOf(fine)), byte(fine)
			}
			for i := range 16 {
				setFine(i, i%10)
			}
			setFine(14, 57) // The second batch of 8, position 6: on the last shard.
			ds, err := data.NewDataset("train", recs, data.DatasetOptions{BatchSize: 8, Epochs: 1, Check: m.HostGuard()})
			require.NoError(t, err)
			dds, err := newDistributedDataset(backend, ds, n)
			require.NoError(t, err)
			batches := 0
			for batch, err := range dds.DistributedIter() {
				if err != nil {
					var lre *data.LabelRangeError
					require.ErrorAs(t, err, &lre)
					require.Equal(t, 1, lre.Batch)
					require.Equal(t, 8, lre.BatchSize)
					require.Equal(t, []data.BadLabel{{Position: 6, Example: 14, Label: 57}}, lre.Bad)
					break
				}
				require.Len(t, batch.Inputs[0].Shards(), n)
				require.Equal(t, []int{8, 32, 32, 3}, batch.Inputs[0].Shape().Dimensions)
				_ = batch.Finalize()
				batches++
			}
			require.Equal(t, 1, batches)
		})
	}
}

// TestDevicesCheckpoints: checkpoints do not depend on the device count. A run saved at step 2
// on 4 devices resumes on 1 (and one saved on 1 resumes on 4), and reaches the parameters of
// an uninterrupted run; a checkpoint is evaluated alike on 1, 2 and 4 devices.
func TestDevicesCheckpoints(t *testing.T) {
	backend := devicesTestBackend(t, 4)
	trainRecs, testRecs := labtest.TrainTestRecords(t, data.CIFAR10(), 64, 30, 5)
	cfg := with(t, Defaults(), map[string]string{"model": cifarlib.ArchCNN, "steps": "4", "batch": "16", "seed": "3", "optimizer": "sgd",
		"lr": "0.01", "no-eval": "true"})
	env := Env{Backend: backend, Train: trainRecs, Test: testRecs, Progress: ProgressOff}
	straight, err := NewTrainer(cfg, env)
	require.NoError(t, err)
	_, err = straight.Run(context.Background())
	require.NoError(t, err)
	want := storeValues(t, straight.Store())
	init := initialValues(t, cfg, env)

	for _, c := range []struct{ first, second int }{{4, 1}, {1, 4}} {
		t.Run(fmt.Sprintf("%d then %d", c.first, c.second), func(t *testing.T) {
			dir := t.TempDir()
			part := cfg
			part.Checkpoint.Dir, part.Run.Steps, part.Compute.Devices = dir, 2, c.first
			res, err := Train(context.Background(), part, env)
			require.NoError(t, err)
			require.Equal(t, 2, res.EndStep)

			rest := cfg
			rest.Checkpoint.Dir, rest.Compute.Devices = dir, c.second
			tr, err := NewTrainer(rest, env)
			require.NoError(t, err)
			res, err = tr.Run(context.Background())
			require.NoError(t, err)
			require.True(t, res.Resumed)
			require.Equal(t, 2, res.StartStep)
			require.Equal(t, 4, res.EndStep)
			require.Equal(t, c.second, res.Devices)
			requireSameTraining(t, init, want, storeValues(t, tr.Store()), 4, testenv.KinkTolerance(devicesBatch, devicesMinHW))

			var accuracy []float64
			for _, n := range []int{1, 2, 4} {
				ck, err := LoadCheckpoint(dir, backend)
				require.NoError(t, err)
				if n == 1 {
					requireNoNearTies(t, ck.Trained, testRecs) // So the predictions cannot depend on rounding.
				}
				ev, err := Evaluate(context.Background(), backend, ck.Model, ck.Store, testRecs, EvalOptions{BatchSize: 8, Devices: n})
				require.NoError(t, err, "evaluating on %d devices", n)
				require.Equal(t, 30, ev.Examples)
				accuracy = append(accuracy, ev.Accuracy)
			}
			require.Equal(t, []float64{accuracy[0], accuracy[0], accuracy[0]}, accuracy)
		})
	}
}

// TestDevicesErrors: the typed errors for a device count that cannot work, with their messages.
func TestDevicesErrors(t *testing.T) {
	recs, _ := labtest.TrainTestRecords(t, data.CIFAR10(), 32, 10, 1)
	base := with(t, Defaults(), map[string]string{"model": cifarlib.ArchLinear, "steps": "1", "batch": "8", "no-eval": "true"})
	baseEnv := Env{Train: recs, Progress: ProgressOff}

	t.Run("go backend", func(t *testing.T) {
		cfg := base
		cfg.Compute.Backend, cfg.Compute.Devices = backends.Go, 2
		_, err := NewTrainer(cfg, baseEnv)
		var due *backends.DevicesUnsupportedError
		require.ErrorAs(t, err, &due)
		require.True(t, errors.Is(err, backends.ErrDevices))
		require.Equal(t, 2, due.Requested)
		require.EqualError(t, err, "backends: 2 devices asked of the go (pure Go, CPU) backend, which has one device and runs "+
			"no distributed programs: use the cpu backend (XLA's CPU plugin, which can expose several CPU devices: "+plugins.XLACPUInstallHint+
			") or cuda for several GPUs, or 1 device")
		// "all" on the pure-Go backend is its one device.
		b, err := backends.NewWithDevices(backends.Go, backends.DevicesAll)
		require.NoError(t, err)
		n, err := backends.ResolveDevices(b, backends.DevicesAll)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	})

	t.Run("negative", func(t *testing.T) {
		cfg := base
		cfg.Compute.Backend, cfg.Compute.Devices = backends.Go, -3
		_, err := NewTrainer(cfg, baseEnv)
		var ce *ConfigError
		require.ErrorAs(t, err, &ce)
		require.EqualError(t, err, "training: config: Compute.Devices=-3: use a whole number > 0 or all")
	})

	t.Run("batch not divisible", func(t *testing.T) {
		err := backends.CheckBatchDivisible("BatchSize", 10, 4)
		var bde *backends.BatchDivisibilityError
		require.ErrorAs(t, err, &bde)
		require.Equal(t, backends.BatchDivisibilityError{Field: "BatchSize", BatchSize: 10, Devices: 4, Below: 8, Above: 12}, *bde)
		require.EqualError(t, err, "backends: training config: BatchSize=10 does not split across 4 devices (10 is not a "+
			"multiple of 4): use 8 or 12, or another number of devices")
		require.EqualError(t, backends.CheckBatchDivisible("BatchSize", 3, 4), "backends: training config: BatchSize=3 does not split "+
			"across 4 devices (3 is not a multiple of 4): use 4, or another number of devices")
		require.NoError(t, backends.CheckBatchDivisible("BatchSize", 12, 4))
		require.NoError(t, backends.CheckBatchDivisible("BatchSize", 7, 1))

		cfg, env := base, baseEnv
		env.Backend, cfg.Compute.Devices, cfg.Data.BatchSize = devicesTestBackend(t, 4), 4, 10
		_, err = NewTrainer(cfg, env)
		require.ErrorAs(t, err, &bde)
		require.Equal(t, 8, bde.Below)
		require.True(t, errors.Is(err, backends.ErrDevices))
	})

	t.Run("more devices than exist", func(t *testing.T) { checkTooManyDevices(t, base, baseEnv, recs) })
}

// checkTooManyDevices checks the error of more devices than the backend has.
func checkTooManyDevices(t *testing.T, base Settings, baseEnv Env, recs *data.Records) {
	cfg, env := base, baseEnv
	env.Backend, cfg.Compute.Devices = devicesTestBackend(t, 2), 4
	_, err := NewTrainer(cfg, env)
	var dce *backends.DeviceCountError
	require.ErrorAs(t, err, &dce)
	require.Equal(t, 4, dce.Requested)
	require.Equal(t, 2, dce.Available)
	require.EqualError(t, err, "backends: 4 devices asked for, but the xla:cpu (XLA CPU plugin) backend has 2: create the "+
		"backend with NewBackendWithDevices(name, 4) (XLA's CPU plugin makes as many devices as asked), or use at most 2")
	_, err = backends.NewWithDevices("cpu", backends.MaxCPUDevices+1)
	require.ErrorAs(t, err, &dce)
	require.Equal(t, backends.MaxCPUDevices, dce.Available)

	ds, err := data.NewDataset("train", recs, data.DatasetOptions{BatchSize: 8})
	require.NoError(t, err)
	_, err = newDistributedDataset(env.Backend, ds, 1)
	require.ErrorAs(t, err, &dce)
	require.Contains(t, err.Error(), "a distributed dataset needs at least 2 devices")
}

// TestParseDevices: the --devices values.
func TestParseDevices(t *testing.T) {
	for in, want := range map[string]int{"1": 1, "4": 4, "all": backends.DevicesAll, " ALL ": backends.DevicesAll} {
		got, err := backends.ParseDevices(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"0", "-2", "two", "2x", ""} {
		_, err := backends.ParseDevices(in)
		var ve *backends.DevicesValueError
		require.ErrorAs(t, err, &ve, in)
	}
}

// TestNewBackendWithDevices: the XLA CPU backend gets exactly the number of devices asked for.
func TestNewBackendWithDevices(t *testing.T) {
	devicesTestBackend(t, 2) // Skips on the pure-Go test backend.
	for _, n := range []int{2, 3, 8} {
		b, err := backends.NewWithDevices(backends.CPU, n)
		require.NoError(t, err)
		require.Equal(t, n, b.NumDevices())
		require.Len(t, backends.ListDevices(b), n)
		b.Finalize()
	}
	b, err := backends.NewWithDevices(backends.CPU, backends.DevicesAll)
	require.NoError(t, err)
	require.Equal(t, 4, b.NumDevices(), "the XLA CPU plugin's default")
	b.Finalize()
}

// TestDevicesLossOnLastShard is the notebook's scale-out guard cell: a batch of 16 sharded
// across 2 and 4 devices, where the label at position 13 (on the last device's shard) becomes
// 10 on the device; the in-graph guard reports it at its position in the whole batch, and the
// loss equals the one-device loss with the same weights.
func TestDevicesLossOnLastShard(t *testing.T) {
	recs := data.NewRecords(data.CIFAR10(), "devices-loss-test", 16)
	recs.RawLabels[13] = 9
	m, err := cifarlib.NewModel(data.CIFAR10(), cifarlib.ArchCNN).Done()
	require.NoError(t, err)
	plusOne := cifarlib.LossOptions{MapLabels: func(l *graph.Node) *graph.Node { return graph.AddScalar(l, 1) }}
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			backend := devicesTestBackend(t, n)
			b, err := recs.Batch(0, 16) // Tensors are tied to the backend they first ran on.
			require.NoError(t, err)
			opts := plusOne
			opts.Store = testenv.SeededStore(t, 5)
			want, err := m.LossOn(backend, b.Images, b.Labels, opts)
			var de *cifarlib.DeviceLabelError
			require.ErrorAs(t, err, &de)

			opts.Store = testenv.SeededStore(t, 5)
			got, err := m.LossOnDevices(backend, n, b.Images, b.Labels, opts)
			require.ErrorAs(t, err, &de)
			require.Equal(t, []data.BadLabel{{Position: 13, Example: -1, Label: 10}}, de.Bad)
			require.Equal(t, 16, de.BatchSize)
			require.Equal(t, 1, de.NumBad)
			// The same weights, one forward pass in another summation order.
			testenv.RequireSpread(t, "loss", math.Abs(float64(got-want))/math.Abs(float64(want)), testenv.TolReorder)
			device, local := cifarlib.ShardOf(13, 16, n)
			require.Equal(t, n-1, device)
			require.Equal(t, 13-(n-1)*16/n, local)

			_, err = m.LossOnDevices(backend, n, b.Images, b.Labels, cifarlib.LossOptions{}) // In range: no error.
			require.NoError(t, err)

			// The notebook's form: one label replaced on the device.
			_, err = m.LossOnDevices(backend, n, b.Images, b.Labels, cifarlib.LossOptions{MapLabels: cifarlib.ReplaceLabelOnDevice(13, 57)})
			require.ErrorAs(t, err, &de)
			require.Equal(t, []data.BadLabel{{Position: 13, Example: -1, Label: 57}}, de.Bad)
			require.Equal(t, 16, de.BatchSize)
			require.Contains(t, err.Error(), "1 of 16 labels that reached the loss on the device are out of range [0, 10): position 13 label 57")
		})
	}
	device, local := cifarlib.ShardOf(5, 16, 1)
	require.Equal(t, []int{0, 5}, []int{device, local})
}
