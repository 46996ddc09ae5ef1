package training

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/stretchr/testify/require"
)

// precisionTrain trains arch for steps SGD steps at precision p on backend (on devices devices,
// with checkpoints in dir unless it is "") and returns the result and the trainer.
func precisionTrain(t *testing.T, backend compute.Backend, arch string, devices int, p cifarlib.Precision, dir string, steps int) (*Result, *Trainer) {
	t.Helper()
	trainRecs, _ := labtest.TrainTestRecords(t, data.CIFAR10(), 64, 20, 3)
	cfg := with(t, Defaults(), map[string]string{"model": arch, "devices": fmt.Sprint(devices), "precision": string(p),
		"steps": fmt.Sprint(steps), "batch": "16", "seed": "7", "optimizer": "sgd", "lr": "0.01", "history-every": "1",
		"no-eval": "true", "checkpoint": dir})
	tr, err := NewTrainer(cfg, Env{Backend: backend, Train: trainRecs, Progress: ProgressOff})
	require.NoError(t, err)
	res, err := tr.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, p, res.Precision)
	return res, tr
}

// TestPrecisionBF16CloseToF32: for the cnn and resnet20, with the same seeded weights, the
// bf16-mixed logits differ from the float32 ones by a relative L2 within bf16Tolerance (and are
// not identical: bfloat16 really ran), with the layer lowering of the test backend (native on
// XLA, im2col + matmul on the pure-Go backend; TestPrecisionBF16AccumulatesInFloat32 runs both);
// three SGD steps in each precision from the same start give per-step losses within the same
// bound.
func TestPrecisionBF16CloseToF32(t *testing.T) {
	backend := labtest.Backend(t)
	recs, _ := labtest.TrainTestRecords(t, data.CIFAR10(), 16, 4, 5)
	batch, err := recs.Batch(0, 16)
	require.NoError(t, err)
	for _, arch := range []string{cifarlib.ArchCNN, cifarlib.ArchResNet20} {
		if arch == cifarlib.ArchResNet20 && backend.String() == backends.Go {
			continue // The pure-Go backend's resnet20 steps take 40 s here; the XLA CPU pass runs them.
		}
		low, high := testenv.Bf16Tolerance(precisionDepth[arch])
		for _, ops := range []cifarlib.LayerOps{cifarlib.LayerOpsFor(backend)} {
			t.Run(arch+"/"+ops.String(), func(t *testing.T) {
				m, err := cifarlib.NewModel(data.CIFAR10(), arch).Backend(backend).LayerOps(ops).Done()
				require.NoError(t, err)
				store := testenv.SeededStore(t, 11)
				logits := map[cifarlib.Precision][]float32{}
				for _, p := range []cifarlib.Precision{cifarlib.PrecisionF32, cifarlib.PrecisionBF16Mixed} {
					m.Precision = p
					out, err := m.Logits(backend, store, batch.Images)
					require.NoError(t, err)
					require.Equal(t, dtypes.Float32, out.DType())
					logits[p] = tensors.MustCopyFlatData[float32](out)
				}
				d := testenv.NormRelDiff(nil, logits[cifarlib.PrecisionF32], logits[cifarlib.PrecisionBF16Mixed])
				require.Greater(t, d, low, "bf16-mixed logits equal the f32 ones: bfloat16 did not run")
				testenv.RequireSpread(t, "logits", d, high)
			})
		}
		t.Run(arch+"/train", func(t *testing.T) {
			f32, _ := precisionTrain(t, backend, arch, 1, cifarlib.PrecisionF32, "", 3)
			bf16, _ := precisionTrain(t, backend, arch, 1, cifarlib.PrecisionBF16Mixed, "", 3)
			require.Len(t, bf16.History.Points, 3)
			worst := 0.0
			for i, p := range f32.History.Points {
				worst = math.Max(worst, math.Abs(bf16.History.Points[i].Loss-p.Loss)/p.Loss)
			}
			require.Greater(t, worst, 0.0)
			testenv.RequireSpread(t, "loss", worst, high)
		})
	}
}

// TestPrecisionGuardsIdentical: the guards fire alike in both precisions, with the same error
// text: the static head check (CIFAR-100 on a 10-class head), the host guard (the same labels
// met by a model built with that head), the in-graph guard (labels shifted out of the head on the device) and,
// unguarded, the count of examples that got exactly zero loss.
func TestPrecisionGuardsIdentical(t *testing.T) {
	backend := labtest.Backend(t)
	fine, _ := labtest.TrainTestRecords(t, data.CIFAR100(data.LabelsFine), 32, 4, 2)
	messages := map[string][]string{}
	var zeroLoss []ZeroLossStats
	for _, p := range []cifarlib.Precision{cifarlib.PrecisionF32, cifarlib.PrecisionBF16Mixed} {
		base := with(t, Defaults(), map[string]string{"model": cifarlib.ArchCNN, "precision": string(p), "steps": "2", "batch": "8",
			"no-eval": "true"})
		env := Env{Backend: backend, Train: fine, Progress: ProgressOff}

		cfg := base
		cfg.Data.Spec, cfg.Model.Head = data.CIFAR100(data.LabelsFine), 10
		_, err := Train(context.Background(), cfg, env)
		var hm *cifarlib.HeadMismatchError
		require.ErrorAs(t, err, &hm, p)
		messages["static"] = append(messages["static"], err.Error())

		narrow, err := cifarlib.NewModel(data.CIFAR100(data.LabelsFine), cifarlib.ArchCNN).Head(10).Backend(backend).Precision(p).Done()
		require.NoError(t, err)
		ds, err := data.NewDataset("train", labtest.HostGuardRecords([]byte{3, 57, 9, 10, 99, 0}),
			data.DatasetOptions{BatchSize: 3, Epochs: 1, Check: narrow.HostGuard()})
		require.NoError(t, err)
		loop := train.NewLoop(train.NewTrainer(backend, model.NewStore(), narrow.ModelFn, narrow.LossFn(cifarlib.GuardOff),
			optimizer.StochasticGradientDescent(), nil, nil))
		_, err = loop.RunEpochs(ds, 1)
		var lre *data.LabelRangeError
		require.ErrorAs(t, err, &lre, p)
		messages["host"] = append(messages["host"], lre.Error())

		m, err := cifarlib.NewModel(data.CIFAR10(), cifarlib.ArchCNN).Backend(backend).Precision(p).Done()
		require.NoError(t, err)
		guarded := m.LossFn(cifarlib.GuardAll)
		shifted := func(labels, logits []*graph.Node) *graph.Node {
			return guarded([]*graph.Node{graph.AddScalar(labels[0], 8)}, logits) // 0..9 -> 8..17
		}
		recs := data.NewRecords(data.CIFAR10(), "precision-guard-test", 4)
		copy(recs.RawLabels, []byte{0, 1, 2, 3})
		ds, err = data.NewDataset("train", recs, data.DatasetOptions{BatchSize: 4, Epochs: 1})
		require.NoError(t, err)
		loop = train.NewLoop(train.NewTrainer(backend, model.NewStore(), m.ModelFn, shifted,
			optimizer.StochasticGradientDescent(), nil, nil))
		cifarlib.AttachDeviceGuard(loop)
		_, err = loop.RunEpochs(ds, 1)
		var de *cifarlib.DeviceLabelError
		require.ErrorAs(t, err, &de, p)
		require.Equal(t, []data.BadLabel{{Position: 2, Example: -1, Label: 10}, {Position: 3, Example: -1, Label: 11}}, de.Bad)
		messages["device"] = append(messages["device"], de.Error())

		cfg = base
		cfg.Data.Spec, cfg.Model.Head, cfg.Model.Unguarded = data.CIFAR100(data.LabelsFine), 10, true
		res, err := Train(context.Background(), cfg, env)
		require.NoError(t, err)
		zeroLoss = append(zeroLoss, res.ZeroLoss)
	}
	for guard, msgs := range messages {
		require.Equal(t, msgs[0], msgs[1], "the %s guard's message in f32 and bf16-mixed", guard)
	}
	require.Equal(t, zeroLoss[0], zeroLoss[1])
	require.Positive(t, zeroLoss[0].OutOfRange)
}

// TestPrecisionDevices: bf16-mixed trains on 1 and on 4 XLA CPU devices alike: loss curves
// within bf16Tolerance of each other, every variable within precisionDevicesTolerance.
func TestPrecisionDevices(t *testing.T) {
	backend := devicesTestBackend(t, 4)
	for _, arch := range []string{cifarlib.ArchCNN, cifarlib.ArchResNet20} {
		t.Run(arch, func(t *testing.T) {
			one, oneTr := precisionTrain(t, backend, arch, 1, cifarlib.PrecisionBF16Mixed, "", 3)
			four, fourTr := precisionTrain(t, backend, arch, 4, cifarlib.PrecisionBF16Mixed, "", 3)
			require.Equal(t, 4, four.Devices)
			worst := 0.0
			for i, p := range one.History.Points {
				worst = math.Max(worst, math.Abs(four.History.Points[i].Loss-p.Loss)/p.Loss)
			}
			_, high := testenv.Bf16Tolerance(precisionDepth[arch])
			testenv.RequireSpread(t, "loss curve", worst, high)
			want, got := storeValues(t, oneTr.Store()), storeValues(t, fourTr.Store())
			require.Equal(t, len(want), len(got))
			for path, w := range want {
				testenv.RequireClose(t, w, got[path], testenv.PrecisionDevicesTolerance, path)
			}
		})
	}
}

// TestPrecisionResumeAcrossPrecisions: a run checkpointed in one precision resumes in the other
// (f32 -> bf16-mixed and back; run.json records the resumed run's precision), its checkpoint
// holds float32 variables only, and it evaluates in either precision.
func TestPrecisionResumeAcrossPrecisions(t *testing.T) {
	backend := labtest.Backend(t)
	for _, order := range [][2]cifarlib.Precision{{cifarlib.PrecisionF32, cifarlib.PrecisionBF16Mixed}, {cifarlib.PrecisionBF16Mixed, cifarlib.PrecisionF32}} {
		t.Run(fmt.Sprintf("%s-then-%s", order[0], order[1]), func(t *testing.T) {
			dir := t.TempDir()
			first, _ := precisionTrain(t, backend, cifarlib.ArchCNN, 1, order[0], dir, 2)
			require.Equal(t, 2, first.EndStep)
			second, _ := precisionTrain(t, backend, cifarlib.ArchCNN, 1, order[1], dir, 4)
			require.True(t, second.Resumed)
			require.Equal(t, 2, second.StartStep)
			require.Equal(t, 4, second.EndStep)
			require.Len(t, second.History.Points, 4)
			rec, err := runs.ReadRecord(dir)
			require.NoError(t, err)
			precision, _ := rec.Settings.Value("precision")
			require.Equal(t, string(order[1]), precision)
			var result Result
			require.NoError(t, json.Unmarshal(rec.Result, &result))
			require.Equal(t, order[1], result.Precision)

			ck, err := LoadCheckpoint(dir, backend)
			require.NoError(t, err)
			require.Equal(t, 4, ck.Info.Step)
			_, testRecs := labtest.TrainTestRecords(t, data.CIFAR10(), 64, 20, 3)
			var evals []*EvalResult
			for _, p := range []cifarlib.Precision{cifarlib.PrecisionF32, cifarlib.PrecisionBF16Mixed} {
				ck.Model.Precision = p
				ev, err := ck.Evaluate(context.Background(), testRecs, EvalOptions{BatchSize: 10})
				require.NoError(t, err)
				evals = append(evals, ev)
			}
			_, high := testenv.Bf16Tolerance(precisionDepth[cifarlib.ArchCNN])
			testenv.RequireSpread(t, "eval loss", math.Abs(evals[1].Loss-evals[0].Loss)/evals[0].Loss, high)
			// The variables the evaluations loaded from the checkpoint: float32, whichever precision saved them.
			vars := 0
			for v := range ck.Store.IterVariables() {
				if v.DType().IsFloat() {
					require.Equal(t, dtypes.Float32, v.DType(), v.Path())
					vars++
				}
			}
			require.Greater(t, vars, 6)
		})
	}
}

// TestTrainConfigPrecision: Train checks Settings.Compute.Precision, and the backend's bfloat16
// support before anything is loaded or compiled (*cifarlib.PrecisionError).
func TestTrainConfigPrecision(t *testing.T) {
	s := with(t, Defaults(), map[string]string{"steps": "1"})
	s.Compute.Precision = "fp16"
	_, err := NewTrainer(s, Env{})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	require.EqualError(t, err, `training: config: Compute.Precision="fp16": use f32 or bf16-mixed`)

	goBackend, err := backends.New(backends.Go)
	require.NoError(t, err)
	noBF16 := testenv.NoBF16Backend{Backend: goBackend}
	trainRecs, _ := labtest.TrainTestRecords(t, data.CIFAR10(), 8, 4, 1)
	_, err = NewTrainer(with(t, Defaults(), map[string]string{"precision": "bf16-mixed", "steps": "1", "no-eval": "true"}),
		Env{Backend: noBF16, Train: trainRecs, Progress: ProgressOff})
	var pe *cifarlib.PrecisionError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, cifarlib.PrecisionBF16Mixed, pe.Precision)
}

// precisionDepth is the number of product layers on the longest path of each architecture.
var precisionDepth = map[string]int{cifarlib.ArchCNN: 4, cifarlib.ArchResNet20: 20}
