package cifarlib

import (
	"math"
	"slices"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/train/loss"
	"github.com/stretchr/testify/require"
)

// TestXLACPUMatchesGo runs one small graph (convolution, matmul, ReLU, max-pool, batch mean,
// sparse cross-entropy and its gradients) on the XLA CPU plugin and on the pure-Go backend:
// the numbers agree to float32 rounding.
func TestXLACPUMatchesGo(t *testing.T) {
	testenv.XLACPUPluginOrSkip(t)
	xlaB, err := backends.New("cpu")
	require.NoError(t, err)
	require.Equal(t, "xla:cpu (XLA CPU plugin)", backends.Name(xlaB))
	requireSameNumbersAsGo(t, xlaB, testenv.TolReorderOp)
}

// TestCUDAMatchesGo is the same check on XLA CUDA, when a GPU and the CUDA plugin are there
// (bench/gpu.sh runs it). TF32 convolutions and matmuls (XLA's GPU default) keep about 3
// significant digits.
func TestCUDAMatchesGo(t *testing.T) {
	if !plugins.HasNvidiaGPU() {
		t.Skip("no NVIDIA GPU")
	}
	b, err := backends.New("cuda")
	if err != nil {
		t.Skipf("no usable CUDA backend: %v", err)
	}
	require.Contains(t, backends.Name(b), "xla:cuda (XLA CUDA")
	requireSameNumbersAsGo(t, b, 5e-3)
}

// requireSameNumbersAsGo compares a small graph's outputs on b with the pure-Go backend's:
// |got-want| <= tol*(1+|want|) element by element.
func requireSameNumbersAsGo(t *testing.T, b compute.Backend, tol float64) {
	t.Helper()
	goB, err := backends.New("go")
	require.NoError(t, err)
	// Inputs: 2 images 6x6x3, a 3x3x3x4 kernel, a 36x5 dense matrix (after a 2x2 max-pool) and labels.
	x := make([]float32, 2*6*6*3)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.61)) * 0.9
	}
	k := make([]float32, 3*3*3*4)
	for i := range k {
		k[i] = float32(math.Cos(float64(i)*0.37)) * 0.3
	}
	w := make([]float32, 36*5)
	for i := range w {
		w[i] = float32(math.Sin(float64(i)*0.23+1)) * 0.2
	}
	fn := func(x, k, w, labels *graph.Node) []*graph.Node {
		pre := graph.Convolve(x, k).PadSame().Done() // [2, 6, 6, 4]
		y := graph.Max(pre, graph.ZerosLike(pre))    // ReLU
		y = graph.MaxPool(y).Window(2).Done()        // [2, 3, 3, 4]
		flat := graph.Reshape(y, 2, 36)
		logits := graph.Dot(flat, w).Product() // [2, 5]
		lossV := graph.ReduceAllMean(loss.SparseCategoricalCrossEntropyLogits(
			[]*graph.Node{labels}, []*graph.Node{logits}))
		grads := graph.Gradient(lossV, k, w)
		return []*graph.Node{y, logits, lossV, grads[0], grads[1], pre}
	}
	run := func(b compute.Backend) []*tensors.Tensor {
		outs, err := graph.ExecOnceN(b, fn,
			tensors.FromFlatDataAndDimensions(x, 2, 6, 6, 3), tensors.FromFlatDataAndDimensions(k, 3, 3, 3, 4),
			tensors.FromFlatDataAndDimensions(w, 36, 5), [][]int32{{3}, {1}})
		require.NoError(t, err, backends.Name(b))
		return outs
	}
	want, got := run(goB), run(b)
	requireNoKinks(t, tensors.MustCopyFlatData[float32](want[5]))
	names := []string{"pooled activations", "logits", "loss", "kernel gradient", "dense gradient"}
	for i, name := range names {
		// EqualDimensions: a scalar's dimensions are []int{} on one backend and nil on the other
		// since compute v0.1.14.
		require.True(t, want[i].Shape().EqualDimensions(got[i].Shape()), "%s: %s on go, %s on %s", name, want[i].Shape(), got[i].Shape(), backends.Name(b))
		wv, gv := tensors.MustCopyFlatData[float32](want[i]), tensors.MustCopyFlatData[float32](got[i])
		testenv.RequireClose(t, wv, gv, tol, name+" on "+backends.Name(b))
		nonZero := 0
		for _, v := range wv {
			if v != 0 {
				nonZero++
			}
		}
		require.Greater(t, nonZero, len(wv)/4, "%s: the test values must not be mostly zero", name)
	}
	// The loss itself, independently: 2 examples, mean of -log softmax at the label.
	lv := want[1].Value().([][]float32)
	var ce float64
	for i, label := range []int{3, 1} {
		ce += crossEntropy64(lv[i], label)
	}
	require.InDelta(t, ce/2, float64(tensors.ToScalar[float32](got[2])), tol)
}

// requireNoKinks checks that the inputs of requireSameNumbersAsGo keep the graph away from its
// branch points, so that its gradients may be compared element by element on any CPU: no
// ReLU pre-activation within 1e-5 of zero, and in every 2x2 max-pool window of the [2, 6, 6, 4]
// activations the largest value ahead of the next by 1e-5 or an exact tie of zeros (which
// every backend breaks alike). Rounding moves these values by ~1e-7 (tolReorderOp's sums).
func requireNoKinks(t *testing.T, pre []float32) {
	t.Helper()
	const margin = 1e-5
	for i, v := range pre {
		require.Greater(t, math.Abs(float64(v)), margin, "pre-activation %d = %g is near the ReLU kink: change the test inputs", i, v)
	}
	for b := range 2 {
		for y := 0; y < 6; y += 2 {
			for x := 0; x < 6; x += 2 {
				for c := range 4 {
					var vals []float64
					for dy := range 2 {
						for dx := range 2 {
							vals = append(vals, math.Max(0, float64(pre[((b*6+y+dy)*6+x+dx)*4+c]))) // ReLU
						}
					}
					slices.Sort(vals)
					top, next := vals[3], vals[2]
					require.True(t, top-next > margin || top == 0, "max-pool window (%d,%d,%d,%d) has a near tie %g/%g", b, y, x, c, top, next)
				}
			}
		}
	}
}

// TestBatchNormForXLACPU: XLA's CPU plugin has the fused batch-norm ops.
func TestBatchNormForXLACPU(t *testing.T) {
	testenv.XLACPUPluginOrSkip(t)
	b, err := backends.New("cpu")
	require.NoError(t, err)
	require.Equal(t, BatchNormBackendOps, BatchNormFor(b), "XLA has the fused batch-norm ops")
}
