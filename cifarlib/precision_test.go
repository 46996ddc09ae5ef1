package cifarlib

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/stretchr/testify/require"
)

// bf16UnitRoundoff is bfloat16's unit roundoff: 8 significant bits (7 stored and the implicit
// one), so rounding to nearest changes a value by at most 2^-8 = 0.39% of it.
const bf16UnitRoundoff = 1.0 / 256

// bf16Tolerance bounds the relative L2 difference ||bf16 - f32|| / ||f32|| of a network of depth
// product layers (convolutions and dense layers one after the other). Each layer rounds its two
// operands and its result to bfloat16, at most bf16UnitRoundoff of each value; the products are
// accumulated in float32 (TestPrecisionBF16AccumulatesInFloat32), whose rounding (2^-24) does not
// count at this scale. Three roundings give each layer's output at most 3u of relative error (u
// the unit roundoff; independent roundings over a sum of many products average out rather than
// add, so 3u is generous), and the layers' errors add up at most linearly through ReLU,
// max-pooling, average pooling (1-Lipschitz), batch norm (which rescales signal and error alike)
// and the residual sums. Hence depth*3u: the cnn (3 convolutions + head) 12u = 4.7%, resnet20
// (19 convolutions on its longest path + head) 60u = 23%, against the ~100% of an unrelated
// network. The same bound serves the losses of a few SGD steps: cross-entropy is smooth in the
// logits (its gradient, softmax minus one-hot, has norm at most sqrt(2)), and the weights after a
// few small steps differ by the gradients' rounding, of the same relative size. Measured: logits
// 0.38-0.55%, losses after 3 steps 0.23-1.3% (XLA CPU with AVX-512 or AVX2, and the pure-Go
// backend). The lower bound, 2^-16, sits far below bfloat16's rounding and far above float32's
// (which a float32 run that only claims to be bf16-mixed would show: identical numbers).
func bf16Tolerance(depth int) (low, high float64) {
	return 1.0 / 65536, float64(depth) * 3 * bf16UnitRoundoff
}

// precisionDevicesTolerance bounds |a-b|/(1+|b|) between 1 and 4 devices for every variable
// after three bf16-mixed SGD steps (learning rate 0.01). Both runs round the same float32
// computation to bfloat16 at the same places, but XLA may keep a value at excess precision
// (skip a float32 -> bfloat16 -> float32 round trip) in one partitioning and not in the other, so
// one value can differ by up to 2u between them (each within u of the exact one; u the unit
// roundoff). Batch-norm moving averages follow batch means of such values, of magnitude about 1
// after the batch norms before them (measured: 1.2e-3 for resnet20); weights move by 0.01 times
// gradients that differ as much, far less (measured: 2.4e-4).
const precisionDevicesTolerance = 2 * bf16UnitRoundoff

// precisionDepth is the number of product layers on the longest path of each architecture.
var precisionDepth = map[string]int{ArchCNN: 4, ArchResNet20: 20}

func TestParsePrecision(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Precision
		err  string
	}{
		{"", PrecisionF32, ""},
		{"f32", PrecisionF32, ""},
		{" BF16-Mixed ", PrecisionBF16Mixed, ""},
		{"bf16", "", `cifarlib: unknown precision "bf16": use f32 or bf16-mixed`},
		{"fp16-mixed", "", `cifarlib: unknown precision "fp16-mixed": use f32 or bf16-mixed`},
	} {
		got, err := ParsePrecision(c.in)
		if c.err != "" {
			require.EqualError(t, err, c.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, c.want, got)
	}
	require.Equal(t, "f32", Precision("").String())

	_, err := NewTrainer(TrainConfig{Spec: CIFAR10(), Steps: 1, Precision: "fp16"})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	require.EqualError(t, err, `cifarlib: training config: Precision="fp16": use f32 or bf16-mixed`)
	_, err = NewModel(CIFAR10(), ArchCNN).Precision("tf32").Done()
	require.EqualError(t, err, `cifarlib: unknown precision "tf32": use f32 or bf16-mixed`)
}

// noBF16Backend is a real backend whose capabilities leave out the bfloat16 dtype, as a backend
// without bfloat16 kernels would report.
type noBF16Backend struct{ compute.Backend }

func (b noBF16Backend) Capabilities() compute.Capabilities {
	caps := b.Backend.Capabilities().Clone()
	delete(caps.DTypes, dtypes.BFloat16)
	return caps
}

// TestCheckPrecision: the pure-Go backend of compute v0.1.3 and the test backend run bf16-mixed
// (their DotGeneral and ConvGeneral have bfloat16 kernels); a backend without bfloat16 fails
// with *PrecisionError before anything is loaded or compiled, and f32 runs there.
func TestCheckPrecision(t *testing.T) {
	goBackend, err := NewBackend(BackendGo)
	require.NoError(t, err)
	for _, b := range []compute.Backend{goBackend, testBackend(t)} {
		require.NoError(t, CheckPrecision(b, PrecisionBF16Mixed), BackendName(b))
	}
	noBF16 := noBF16Backend{goBackend}
	require.NoError(t, CheckPrecision(noBF16, PrecisionF32))
	err = CheckPrecision(noBF16, PrecisionBF16Mixed)
	var pe *PrecisionError
	require.ErrorAs(t, err, &pe)
	require.EqualError(t, err, "cifarlib: precision bf16-mixed needs bfloat16 convolutions and matrix products, but backend go (pure Go, CPU) "+
		"lacks the bfloat16 dtype: use precision f32 (--precision f32, TrainConfig.Precision = PrecisionF32) there, or an XLA backend (cpu, cuda)")

	trainRecs, _ := trainTestRecords(t, CIFAR10(), 8, 4, 1)
	_, err = NewTrainer(TrainConfig{Spec: CIFAR10(), Backend: noBF16, Precision: PrecisionBF16Mixed, TrainRecords: trainRecs,
		Steps: 1, SkipFinalEval: true, Progress: ProgressOff})
	require.ErrorAs(t, err, &pe)
	require.Equal(t, PrecisionBF16Mixed, pe.Precision)
}

// TestPrecisionBF16AccumulatesInFloat32: a bfloat16 matrix product of 4096 ones by 4096 ones,
// and 3x3 convolutions of a 3x3 image of 512 channels of ones by a kernel of ones (4608
// products at the centre pixel, natively and as im2col + matmul), come out exactly 4096 and 4608
// (both exact in bfloat16) on the test backend, as mixed precision computes them. A bfloat16
// accumulator would stall at 256, where adding 1 rounds back to 256.
func TestPrecisionBF16AccumulatesInFloat32(t *testing.T) {
	nb := &netBuilder{m: &Model{Precision: PrecisionBF16Mixed}}
	exec, err := graph.NewExec(testBackend(t), func(x *graph.Node) []*graph.Node {
		g := x.Graph()
		ones := graph.Ones(g, shapes.Make(dtypes.Float32, 1, 4096))
		dot := matMul(nb.toCompute(ones), nb.toCompute(graph.Transpose(ones, 0, 1)))
		kernel := nb.toCompute(graph.Ones(g, shapes.Make(dtypes.Float32, 3, 3, 512, 1)))
		native := graph.Convolve(nb.toCompute(x), kernel).PadSame().Done()
		im2col := im2colConvolution(nb.toCompute(x), kernel, 1)
		return []*graph.Node{fromCompute(dot), fromCompute(native), fromCompute(im2col)}
	})
	require.NoError(t, err)
	out, err := exec.Exec(tensors.FromFlatDataAndDimensions(slices.Repeat([]float32{1}, 3*3*512), 1, 3, 3, 512))
	require.NoError(t, err)
	require.Equal(t, [][]float32{{4096}}, out[0].Value())
	for i, name := range []string{"native", "im2col"} {
		center := out[1+i].Value().([][][][]float32)[0][1][1][0]
		require.Equal(t, float32(4608), center, "%s convolution", name)
	}
}

// precisionTrain trains arch for steps SGD steps at precision p on backend (on devices devices,
// with checkpoints in dir unless it is "") and returns the result and the trainer.
func precisionTrain(t *testing.T, backend compute.Backend, arch string, devices int, p Precision, dir string, steps int) (*TrainResult, *Trainer) {
	t.Helper()
	trainRecs, _ := trainTestRecords(t, CIFAR10(), 64, 20, 3)
	cfg := TrainConfig{Spec: CIFAR10(), Model: arch, Backend: backend, Devices: devices, Precision: p, TrainRecords: trainRecs,
		Steps: steps, BatchSize: 16, Seed: 7, Optimizer: "sgd", LearningRate: 0.01, HistoryEvery: 1,
		SkipFinalEval: true, CheckpointDir: dir, Progress: ProgressOff}
	tr, err := NewTrainer(cfg)
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
	backend := testBackend(t)
	recs, _ := trainTestRecords(t, CIFAR10(), 16, 4, 5)
	batch, err := recs.Batch(0, 16)
	require.NoError(t, err)
	for _, arch := range []string{ArchCNN, ArchResNet20} {
		if arch == ArchResNet20 && backend.String() == BackendGo {
			continue // The pure-Go backend's resnet20 steps take 40 s here; the XLA CPU pass runs them.
		}
		low, high := bf16Tolerance(precisionDepth[arch])
		for _, ops := range []LayerOps{LayerOpsFor(backend)} {
			t.Run(arch+"/"+ops.String(), func(t *testing.T) {
				m, err := NewModel(CIFAR10(), arch).Backend(backend).LayerOps(ops).Done()
				require.NoError(t, err)
				store := seededStore(t, 11)
				logits := map[Precision][]float32{}
				for _, p := range []Precision{PrecisionF32, PrecisionBF16Mixed} {
					m.Precision = p
					out, err := m.Logits(backend, store, batch.Images)
					require.NoError(t, err)
					require.Equal(t, dtypes.Float32, out.DType())
					logits[p] = tensors.MustCopyFlatData[float32](out)
				}
				d := normRelDiff(nil, logits[PrecisionF32], logits[PrecisionBF16Mixed])
				require.Greater(t, d, low, "bf16-mixed logits equal the f32 ones: bfloat16 did not run")
				requireSpread(t, "logits", d, high)
			})
		}
		t.Run(arch+"/train", func(t *testing.T) {
			f32, _ := precisionTrain(t, backend, arch, 1, PrecisionF32, "", 3)
			bf16, _ := precisionTrain(t, backend, arch, 1, PrecisionBF16Mixed, "", 3)
			require.Len(t, bf16.History.Points, 3)
			worst := 0.0
			for i, p := range f32.History.Points {
				worst = math.Max(worst, math.Abs(bf16.History.Points[i].Loss-p.Loss)/p.Loss)
			}
			require.Greater(t, worst, 0.0)
			requireSpread(t, "loss", worst, high)
		})
	}
}

// TestPrecisionGuardsIdentical: the guards fire alike in both precisions, with the same error
// text: the static head check (CIFAR-100 on a 10-class head), the host guard (the same labels
// met by a model built with that head), the in-graph guard (labels shifted out of the head on the device) and,
// unguarded, the count of examples that got exactly zero loss.
func TestPrecisionGuardsIdentical(t *testing.T) {
	backend := testBackend(t)
	fine, _ := trainTestRecords(t, CIFAR100(LabelsFine), 32, 4, 2)
	messages := map[string][]string{}
	var zeroLoss []ZeroLossStats
	for _, p := range []Precision{PrecisionF32, PrecisionBF16Mixed} {
		base := TrainConfig{Spec: CIFAR10(), Model: ArchCNN, Backend: backend, Precision: p, Steps: 2, BatchSize: 8,
			SkipFinalEval: true, Progress: ProgressOff}

		cfg := base
		cfg.Spec, cfg.Head, cfg.TrainRecords = CIFAR100(LabelsFine), 10, fine
		_, err := Train(context.Background(), cfg)
		var hm *HeadMismatchError
		require.ErrorAs(t, err, &hm, p)
		messages["static"] = append(messages["static"], err.Error())

		narrow, err := NewModel(CIFAR100(LabelsFine), ArchCNN).Head(10).Backend(backend).Precision(p).Done()
		require.NoError(t, err)
		ds, err := NewDataset("train", hostGuardRecords([]byte{3, 57, 9, 10, 99, 0}),
			DatasetOptions{BatchSize: 3, Epochs: 1, Check: narrow.HostGuard()})
		require.NoError(t, err)
		loop := train.NewLoop(train.NewTrainer(backend, model.NewStore(), narrow.ModelFn, narrow.LossFn(GuardOff),
			optimizer.StochasticGradientDescent(), nil, nil))
		_, err = loop.RunEpochs(ds, 1)
		var lre *LabelRangeError
		require.ErrorAs(t, err, &lre, p)
		messages["host"] = append(messages["host"], lre.Error())

		m, err := NewModel(CIFAR10(), ArchCNN).Backend(backend).Precision(p).Done()
		require.NoError(t, err)
		guarded := m.LossFn(GuardAll)
		shifted := func(labels, logits []*graph.Node) *graph.Node {
			return guarded([]*graph.Node{graph.AddScalar(labels[0], 8)}, logits) // 0..9 -> 8..17
		}
		recs := NewRecords(CIFAR10(), "precision-guard-test", 4)
		copy(recs.RawLabels, []byte{0, 1, 2, 3})
		ds, err = NewDataset("train", recs, DatasetOptions{BatchSize: 4, Epochs: 1})
		require.NoError(t, err)
		loop = train.NewLoop(train.NewTrainer(backend, model.NewStore(), m.ModelFn, shifted,
			optimizer.StochasticGradientDescent(), nil, nil))
		AttachDeviceGuard(loop)
		_, err = loop.RunEpochs(ds, 1)
		var de *DeviceLabelError
		require.ErrorAs(t, err, &de, p)
		require.Equal(t, []BadLabel{{Position: 2, Example: -1, Label: 10}, {Position: 3, Example: -1, Label: 11}}, de.Bad)
		messages["device"] = append(messages["device"], de.Error())

		cfg = base
		cfg.Spec, cfg.Head, cfg.TrainRecords, cfg.Unguarded = CIFAR100(LabelsFine), 10, fine, true
		res, err := Train(context.Background(), cfg)
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
	for _, arch := range []string{ArchCNN, ArchResNet20} {
		t.Run(arch, func(t *testing.T) {
			one, oneTr := precisionTrain(t, backend, arch, 1, PrecisionBF16Mixed, "", 3)
			four, fourTr := precisionTrain(t, backend, arch, 4, PrecisionBF16Mixed, "", 3)
			require.Equal(t, 4, four.Devices)
			worst := 0.0
			for i, p := range one.History.Points {
				worst = math.Max(worst, math.Abs(four.History.Points[i].Loss-p.Loss)/p.Loss)
			}
			_, high := bf16Tolerance(precisionDepth[arch])
			requireSpread(t, "loss curve", worst, high)
			want, got := storeValues(t, oneTr.Store()), storeValues(t, fourTr.Store())
			require.Equal(t, len(want), len(got))
			for path, w := range want {
				requireClose(t, w, got[path], precisionDevicesTolerance, path)
			}
		})
	}
}

// TestPrecisionResumeAcrossPrecisions: a run checkpointed in one precision resumes in the other
// (f32 -> bf16-mixed and back; run.json records the resumed run's precision), its checkpoint
// holds float32 variables only, and it evaluates in either precision.
func TestPrecisionResumeAcrossPrecisions(t *testing.T) {
	backend := testBackend(t)
	for _, order := range [][2]Precision{{PrecisionF32, PrecisionBF16Mixed}, {PrecisionBF16Mixed, PrecisionF32}} {
		t.Run(fmt.Sprintf("%s-then-%s", order[0], order[1]), func(t *testing.T) {
			dir := t.TempDir()
			first, _ := precisionTrain(t, backend, ArchCNN, 1, order[0], dir, 2)
			require.Equal(t, 2, first.EndStep)
			second, _ := precisionTrain(t, backend, ArchCNN, 1, order[1], dir, 4)
			require.True(t, second.Resumed)
			require.Equal(t, 2, second.StartStep)
			require.Equal(t, 4, second.EndStep)
			require.Len(t, second.History.Points, 4)
			rec, err := ReadRunRecord(dir)
			require.NoError(t, err)
			require.Equal(t, order[1], rec.Precision)
			var result TrainResult
			require.NoError(t, json.Unmarshal(rec.Result, &result))
			require.Equal(t, order[1], result.Precision)

			ck, err := LoadCheckpoint(dir, backend)
			require.NoError(t, err)
			require.Equal(t, 4, ck.Info.Step)
			_, testRecs := trainTestRecords(t, CIFAR10(), 64, 20, 3)
			var evals []*EvalResult
			for _, p := range []Precision{PrecisionF32, PrecisionBF16Mixed} {
				ck.Model.Precision = p
				ev, err := ck.Evaluate(context.Background(), testRecs, EvalOptions{BatchSize: 10})
				require.NoError(t, err)
				evals = append(evals, ev)
			}
			_, high := bf16Tolerance(precisionDepth[ArchCNN])
			requireSpread(t, "eval loss", math.Abs(evals[1].Loss-evals[0].Loss)/evals[0].Loss, high)
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

// TestPrecisionSummarizeAndDiagnose: Summarize and Diagnose of a bf16-mixed model report the
// same layers, shapes and float32 parameters as of the f32 model, and the same verdict.
func TestPrecisionSummarizeAndDiagnose(t *testing.T) {
	root := diagnoseData(t)
	for _, arch := range []string{ArchCNN, ArchResNet20} {
		var sums []*Summary
		var diags []*Diagnosis
		for _, p := range []Precision{PrecisionF32, PrecisionBF16Mixed} {
			m, err := NewModel(CIFAR100(LabelsFine), arch).Head(10).Backend(testBackend(t)).Precision(p).Done()
			require.NoError(t, err)
			sum, err := Summarize(m, testBackend(t), 4)
			require.NoError(t, err)
			sums = append(sums, sum)
			d, err := DiagnoseWith(m, root, DiagnoseOptions{Backend: testBackend(t), BatchSize: 16})
			require.NoError(t, err)
			diags = append(diags, d)
		}
		require.Equal(t, sums[0], sums[1], arch)
		require.Positive(t, sums[1].TotalParams)
		require.Equal(t, diags[0], diags[1], arch)
		require.False(t, diags[1].OK)
	}
}
