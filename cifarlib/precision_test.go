package cifarlib

import (
	"slices"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"
)

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
	_, err := NewModel(data.CIFAR10(), ArchCNN).Precision("tf32").Done()
	require.EqualError(t, err, `cifarlib: unknown precision "tf32": use f32 or bf16-mixed`)
}

// TestCheckPrecision: the pure-Go backend of compute v0.1.3 and the test backend run bf16-mixed
// (their DotGeneral and ConvGeneral have bfloat16 kernels); a backend without bfloat16 fails
// with *PrecisionError before anything is loaded or compiled, and f32 runs there.
func TestCheckPrecision(t *testing.T) {
	goBackend, err := backends.New(backends.Go)
	require.NoError(t, err)
	for _, b := range []compute.Backend{goBackend, labtest.Backend(t)} {
		require.NoError(t, CheckPrecision(b, PrecisionBF16Mixed), backends.Name(b))
	}
	noBF16 := testenv.NoBF16Backend{Backend: goBackend}
	require.NoError(t, CheckPrecision(noBF16, PrecisionF32))
	err = CheckPrecision(noBF16, PrecisionBF16Mixed)
	var pe *PrecisionError
	require.ErrorAs(t, err, &pe)
	require.EqualError(t, err, "cifarlib: precision bf16-mixed needs bfloat16 convolutions and matrix products, but backend go (pure Go, CPU) "+
		"lacks the bfloat16 dtype: use precision f32 (precision=f32, training.Settings.Compute.Precision = cifarlib.PrecisionF32) there, or an XLA backend (cpu, cuda)")
}

// TestPrecisionBF16AccumulatesInFloat32: a bfloat16 matrix product of 4096 ones by 4096 ones,
// and 3x3 convolutions of a 3x3 image of 512 channels of ones by a kernel of ones (4608
// products at the centre pixel, natively and as im2col + matmul), come out exactly 4096 and 4608
// (both exact in bfloat16) on the test backend, as mixed precision computes them. A bfloat16
// accumulator would stall at 256, where adding 1 rounds back to 256.
func TestPrecisionBF16AccumulatesInFloat32(t *testing.T) {
	nb := &netBuilder{m: &Model{Precision: PrecisionBF16Mixed}}
	exec, err := graph.NewExec(labtest.Backend(t), func(x *graph.Node) []*graph.Node {
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
			m, err := NewModel(data.CIFAR100(data.LabelsFine), arch).Head(10).Backend(labtest.Backend(t)).Precision(p).Done()
			require.NoError(t, err)
			sum, err := Summarize(m, labtest.Backend(t), 4)
			require.NoError(t, err)
			sums = append(sums, sum)
			d, err := DiagnoseWith(m, root, DiagnoseOptions{Backend: labtest.Backend(t), BatchSize: 16})
			require.NoError(t, err)
			diags = append(diags, d)
		}
		require.Equal(t, sums[0], sums[1], arch)
		require.Positive(t, sums[1].TotalParams)
		require.Equal(t, diags[0], diags[1], arch)
		require.False(t, diags[1].OK)
	}
}
