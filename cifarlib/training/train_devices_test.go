package training

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/go-xla/compute/xla"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"
)

// The device-equality tests compare N devices with one device at the same global batch under
// SGD, whose update is linear in the gradient: the only difference is the order of float32 sums
// (per-device partial sums of gradients and batch-norm statistics, then a cross-device
// all-reduce), plus the ReLU kinks that rounding can flip (kinkTolerance). Adam is compared
// through its loss curve only: it divides by sqrt(v), so a weight whose gradient is near zero
// moves by up to about its learning rate on a rounding difference.

var devicesTestBackends sync.Map // int -> compute.Backend

// devicesTestBackend returns an XLA CPU backend with n devices, created once per test binary.
// The multi-device tests run where the test backend is XLA's CPU plugin (CI's XLA CPU pass,
// GOMLX_BACKEND=xla:/path/to/pjrt_c_api_cpu_plugin.so or cpu); on the pure-Go backend, which
// has one device, they are skipped.
func devicesTestBackend(t *testing.T, n int) compute.Backend {
	t.Helper()
	xb, ok := labtest.Backend(t).(*xla.Backend)
	if !ok || !xb.IsCPU() {
		t.Skipf("multi-device tests run on XLA's CPU plugin (the test backend is %s): set GOMLX_BACKEND=cpu", backends.Name(labtest.Backend(t)))
	}
	if b, ok := devicesTestBackends.Load(n); ok {
		return b.(compute.Backend)
	}
	b, err := backends.NewWithDevices("xla:"+xb.PluginName(), n)
	require.NoError(t, err)
	require.Equal(t, n, b.NumDevices())
	actual, _ := devicesTestBackends.LoadOrStore(n, b)
	return actual.(compute.Backend)
}

// devicesRun trains a small config on backend with the given device count and returns the
// result and the trainer.
func devicesRun(t *testing.T, backend compute.Backend, arch string, devices int, trainRecs, testRecs *data.Records) (*Result, *Trainer) {
	t.Helper()
	cfg := with(t, Defaults(), map[string]string{"model": arch, "devices": fmt.Sprint(devices), "steps": "3", "batch": "16",
		"seed": fmt.Sprint(testenv.SpreadSeed(t, 7)), "optimizer": "sgd", "lr": "0.01", "history-every": "1", "eval-batch": "20"})
	tr, err := NewTrainer(cfg, Env{Backend: backend, Train: trainRecs, Test: testRecs, Progress: ProgressOff})
	require.NoError(t, err)
	res, err := tr.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, devices, res.Devices)
	require.Equal(t, 3, res.EndStep)
	return res, tr
}

// storeValues returns the float32 variables of store by path.
func storeValues(t *testing.T, store *model.Store) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	for _, path := range testenv.SortedVariablePaths(store) {
		v := store.GetVariable(path)
		if v.DType() != dtypes.Float32 || strings.HasPrefix(path, "/metrics/") {
			continue // Metric state has per-trainer names.
		}
		val, err := v.Value()
		require.NoError(t, err, path)
		out[path], err = tensors.CopyFlatData[float32](val)
		require.NoError(t, err, path)
	}
	return out
}

// devicesBatch and devicesMinHW are the device tests' global batch and the smallest feature map
// of cnn and resnet20 (8x8), which set their kink tolerance.
const (
	devicesBatch = 16
	devicesMinHW = 8 * 8
)

// initialValues returns the variables config starts from: one step at a learning rate of 1e-30,
// which moves no float32 weight by a rounding step (and a zero weight by 1e-30). Batch-norm
// moving averages do take that step's batch statistics, so only trainable variables are read
// from it.
func initialValues(t *testing.T, cfg Settings, env Env) map[string][]float32 {
	t.Helper()
	cfg = with(t, cfg, map[string]string{"steps": "1", "lr": "1e-30", "no-eval": "true", "checkpoint": ""})
	env.Test = nil
	cfg.Eval.Every = EvalOff // no test split: the settings given may carry their run's validation interval
	tr, err := NewTrainer(cfg, env)
	require.NoError(t, err)
	_, err = tr.Run(context.Background())
	require.NoError(t, err)
	return storeValues(t, tr.Store())
}

// isMovingAverage reports whether path is a batch-norm moving average (not trained by the
// optimizer: it follows the forward pass's batch statistics).
func isMovingAverage(path string) bool {
	return strings.HasSuffix(path, "/mean") || strings.HasSuffix(path, "/variance")
}

// requireSameTraining compares two runs of one config that differ in rounding only, after steps
// SGD steps from init: every trained variable normwise against its update (w - init), the
// batch-norm moving averages normwise against their values, each within steps kink
// tolerances (each step's gradient can be off by one, and the differences add).
func requireSameTraining(t *testing.T, init, want, got map[string][]float32, steps int, kinkTol float64) {
	t.Helper()
	require.Equal(t, len(want), len(got))
	worst, worstPath, params := 0.0, "", 0
	for path, w := range want {
		g, ok := got[path]
		require.True(t, ok, "variable %s missing", path)
		require.Len(t, g, len(w), path)
		var d float64
		if isMovingAverage(path) {
			d = testenv.NormRelDiff(nil, w, g)
		} else {
			require.Contains(t, init, path)
			d = testenv.NormRelDiff(init[path], w, g)
			params++
		}
		if d > worst || worstPath == "" {
			worst, worstPath = d, path
		}
	}
	require.Greater(t, params, 4)
	testenv.RequireSpread(t, "variables "+worstPath, worst, float64(steps)*kinkTol)
}

// requireSameLossCurve compares two loss curves of one config that differ in rounding only. The
// loss is continuous in the weights: at step 1 (same weights) the two differ by tolReorder; after
// that by the weights' difference, at most kinkTol of each update, times the loss's change, so
// step t is allowed tolReorder·|loss| + kinkTol·(sum of |loss changes| before t).
func requireSameLossCurve(t *testing.T, want, got []runs.HistoryPoint, kinkTol float64) {
	t.Helper()
	require.Equal(t, len(want), len(got))
	worst := 0.0
	for i, p := range want {
		q := got[i]
		require.Equal(t, p.Step, q.Step)
		allowed := testenv.TolReorder*math.Abs(p.Loss) + kinkTol*lossTravel(want[:i+1])
		worst = math.Max(worst, math.Abs(q.Loss-p.Loss)/allowed)
	}
	testenv.RequireSpread(t, "loss curve (fraction of the allowed difference)", worst, 1)
}

// lossTravel is the sum of |loss changes| along points: how far training moved the loss, which
// bounds how far a difference of the weights can move it (requireSameLossCurve).
func lossTravel(points []runs.HistoryPoint) float64 {
	sum := 0.0
	for i := 1; i < len(points); i++ {
		sum += math.Abs(points[i].Loss - points[i-1].Loss)
	}
	return sum
}

// TestDevicesSameAsOneDevice: the same config trained with the global batch sharded across 2
// and 4 XLA CPU devices trains as one device does, for the cnn and resnet20 (batch norm over the
// global batch): the loss curve, the parameters and batch-norm averages (requireSameTraining),
// and the test evaluation. The test split (38 examples, evaluation batch 20) ends in a batch
// that 4 devices pad to 20. With Adam the loss curves agree (cnn).
func TestDevicesSameAsOneDevice(t *testing.T) {
	trainRecs, testRecs := labtest.TrainTestRecords(t, data.CIFAR10(), 64, 38, 3)
	kinkTol := testenv.KinkTolerance(devicesBatch, devicesMinHW)
	for _, arch := range []string{cifarlib.ArchCNN, cifarlib.ArchResNet20} {
		for _, n := range testenv.SpreadDevices(t) {
			t.Run(fmt.Sprintf("%s/%d", arch, n), func(t *testing.T) {
				backend := devicesTestBackend(t, n)
				one, oneTr := devicesRun(t, backend, arch, 1, trainRecs, testRecs)
				many, manyTr := devicesRun(t, backend, arch, n, trainRecs, testRecs)
				require.Len(t, many.History.Points, 3)
				requireSameLossCurve(t, one.History.Points, many.History.Points, kinkTol)
				init := initialValues(t, oneTr.Settings(), oneTr.Env())
				requireSameTraining(t, init, storeValues(t, oneTr.Store()), storeValues(t, manyTr.Store()), 3, kinkTol)

				var summary strings.Builder
				require.NoError(t, many.WriteSummary(&summary))
				require.Contains(t, summary.String(), fmt.Sprintf(", batch 16 sharded across %d devices (%d per device)\n", n, 16/n))

				// The two trained models: their evaluation loss follows the loss curve's bound.
				require.Equal(t, 38, many.Eval.Examples)
				testenv.RequireSpread(t, "eval loss", math.Abs(many.Eval.Loss-one.Eval.Loss),
					testenv.TolReorder*one.Eval.Loss+kinkTol*lossTravel(one.History.Points))

				// One model evaluated on 1 and on n devices: the same forward pass, so the same
				// predictions wherever no two logits are within rounding of each other.
				requireNoNearTies(t, one.Trained, testRecs)
				sharded, err := one.Evaluate(context.Background(), testRecs, EvalOptions{BatchSize: 20, Devices: n})
				require.NoError(t, err)
				require.Equal(t, one.Eval.Confusion, sharded.Confusion)
				require.Equal(t, one.Eval.Accuracy, sharded.Accuracy)
				testenv.RequireSpread(t, "same model eval loss", math.Abs(sharded.Loss-one.Eval.Loss)/one.Eval.Loss, testenv.TolReorder)
			})
		}
	}
	t.Run("cnn/4/adam", func(t *testing.T) {
		backend := devicesTestBackend(t, 4)
		var curves [][]runs.HistoryPoint
		for _, n := range []int{1, 4} {
			s := with(t, Defaults(), map[string]string{"model": cifarlib.ArchCNN, "devices": fmt.Sprint(n), "steps": "5",
				"batch": fmt.Sprint(devicesBatch), "seed": fmt.Sprint(testenv.SpreadSeed(t, 7)), "optimizer": "adam", "lr": "0.001",
				"history-every": "1", "no-eval": "true"})
			res, err := Train(context.Background(), s, Env{Backend: backend, Train: trainRecs, Progress: ProgressOff})
			require.NoError(t, err)
			curves = append(curves, res.History.Points)
		}
		requireSameLossCurve(t, curves[0], curves[1], kinkTol)
	})
}

// requireNoNearTies checks that for every test example the top two logits of res's model are
// further apart than tolReorder of the logits' scale (what a forward pass with other rounding
// can move them by), so that it predicts the same classes on any CPU.
func requireNoNearTies(t *testing.T, res *Trained, recs *data.Records) {
	t.Helper()
	b, err := recs.Batch(0, recs.Len())
	require.NoError(t, err)
	logits, err := res.Logits(b.Images)
	require.NoError(t, err)
	rows := logits.Value().([][]float32)
	minGap, scale := math.Inf(1), 0.0
	for _, row := range rows {
		first, second := math.Inf(-1), math.Inf(-1)
		for _, v := range row {
			scale = math.Max(scale, math.Abs(float64(v)))
			switch x := float64(v); {
			case x > first:
				first, second = x, first
			case x > second:
				second = x
			}
		}
		minGap = math.Min(minGap, first-second)
	}
	require.Greater(t, minGap, testenv.TolReorder*scale, "two logits of a test example are within rounding of a tie: pick other test data")
}

// TestDevicesInterruptAndZeroLoss: on 2 devices a cancelled context stops training right after
// the step during which it was cancelled (the distributed dataset reads ahead, the loop does
// not), the checkpoint holds that step and a resume finishes the run; without the guards, the
// examples with labels outside a 10-class head on CIFAR-100 are counted as on one device.
func TestDevicesInterruptAndZeroLoss(t *testing.T) {
	backend := devicesTestBackend(t, 2)
	trainRecs, testRecs := labtest.TrainTestRecords(t, data.CIFAR10(), 64, 10, 2)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := with(t, Defaults(), map[string]string{"model": cifarlib.ArchLinear, "devices": "2", "steps": "5", "batch": "8",
		"history-every": "1", "no-eval": "true", "checkpoint": dir,
		"eval-every": "1", "eval-examples": "6", "eval-batch": "4"}) // Periodic evaluations on 2 devices, padded.
	env := Env{Backend: backend, Train: trainRecs, Test: testRecs, Progress: ProgressOff, OnPoint: func(p runs.HistoryPoint) error {
		if p.Step == 2 {
			cancel()
		}
		return nil
	}}
	res, err := Train(ctx, cfg, env)
	require.NoError(t, err)
	require.True(t, res.Interrupted)
	require.Equal(t, 2, res.EndStep)
	require.Equal(t, int64(16), res.ZeroLoss.Seen)
	require.Len(t, res.History.Points, 2)
	for _, p := range res.History.Points {
		require.NotNil(t, p.Eval)
		require.Equal(t, 6, p.Eval.Examples)
	}
	env.OnPoint = nil
	res, err = Train(context.Background(), cfg, env)
	require.NoError(t, err)
	require.False(t, res.Interrupted)
	require.Equal(t, 2, res.StartStep)
	require.Equal(t, 5, res.EndStep)

	// What Train returns works on one device and on two, alike.
	one, err := res.Evaluate(context.Background(), testRecs, EvalOptions{BatchSize: 5})
	require.NoError(t, err)
	two, err := res.Evaluate(context.Background(), testRecs, EvalOptions{BatchSize: 5, Devices: 2})
	require.NoError(t, err)
	require.Equal(t, one.Confusion, two.Confusion)
	b, err := testRecs.Batch(0, 4)
	require.NoError(t, err)
	logits, err := res.Logits(b.Images)
	require.NoError(t, err)
	require.Equal(t, []int{4, 10}, logits.Shape().Dimensions)

	spec := data.CIFAR100(data.LabelsFine)
	fine, _ := labtest.TrainTestRecords(t, spec, 64, 10, 4)
	var stats []ZeroLossStats
	for _, n := range []int{1, 2} {
		s := with(t, Defaults(), map[string]string{"dataset": "cifar100", "model": cifarlib.ArchLinear, "head": "10", "guard": "false",
			"devices": fmt.Sprint(n), "steps": "3", "batch": "8", "no-eval": "true"})
		res, err := Train(context.Background(), s, Env{Backend: backend, Train: fine, Progress: ProgressOff})
		require.NoError(t, err)
		stats = append(stats, res.ZeroLoss)
	}
	require.Equal(t, stats[0], stats[1])
	require.Equal(t, int64(24), stats[1].Seen)
	require.Greater(t, stats[1].OutOfRange, int64(12))
}
