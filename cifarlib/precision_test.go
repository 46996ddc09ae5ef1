package cifarlib

import (
	"slices"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
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
