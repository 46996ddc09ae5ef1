package cifarlib

import (
	"math"
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
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"
)

// make_net94's parameters, counted by hand from lib_airbench94.py (PyTorch's
// sum(p.numel() for p in net.parameters()) and the same over those with requires_grad):
//
//	whiten  weight 24·3·2·2 = 288 (requires_grad False), bias 24
//	block1  conv1 64·24·9 = 13,824, norm1 64+64, conv2 64·64·9 = 36,864, norm2 64+64
//	block2  conv1 256·64·9 = 147,456, norm1 256+256, conv2 256·256·9 = 589,824, norm2 256+256
//	block3  conv1 589,824, norm1 256+256, conv2 589,824, norm2 256+256
//	head    256·10 = 2,560 (no bias)
//
// 1,972,792 in all, of which the whitening weights (288) and the batch-norm weights
// (64+64+4·256 = 1,152) do not require a gradient: 1,971,352 trained. The lab keeps the 288 and
// the 1,152 as non-trainable variables, next to the batch-norm statistics (running_mean,
// running_var and num_batches_tracked, kept per channel: 3·1,152).
const (
	airbenchTorchParams   = 1972792
	airbenchTrainedParams = 1971352
	airbenchBNChannels    = 64 + 64 + 4*256
)

// TestAirbench94Parameters: the summary of airbench94 counts make_net94's trained parameters,
// layer by layer, and its shapes, for CIFAR-10 and CIFAR-100 (the head sized from the Spec).
func TestAirbench94Parameters(t *testing.T) {
	for _, spec := range []data.Spec{data.CIFAR10(), data.CIFAR100(data.LabelsFine)} {
		m, err := NewModel(spec, ArchAirbench94).Backend(labtest.Backend(t)).Done()
		require.NoError(t, err)
		s, err := Summarize(m, labtest.Backend(t), 2)
		require.NoError(t, err)
		head := 256 * spec.NumClasses
		require.Equal(t, airbenchTrainedParams-2560+head, s.TotalParams)
		require.Equal(t, 288+airbenchBNChannels+3*airbenchBNChannels, s.NonTrainable)
		require.Equal(t, 288+airbenchBNChannels, s.FixedWeights, "the whitening filters and batch-norm scales")
		require.Equal(t, airbenchTorchParams-2560+head, s.TotalParams+288+airbenchBNChannels, "make_net94's parameters()")
		var names []string
		for _, l := range s.Layers {
			names = append(names, l.Name)
		}
		require.Equal(t, []string{"whiten", "block1", "block2", "block3", "pool", "flatten", "head"}, names)
		want := map[string]struct {
			shape      []int
			params, nt int
		}{
			"whiten":  {[]int{2, 31, 31, 24}, 24, 288},
			"block1":  {[]int{2, 15, 15, 64}, 13824 + 36864 + 2*64, 4 * 2 * 64},
			"block2":  {[]int{2, 7, 7, 256}, 147456 + 589824 + 2*256, 4 * 2 * 256},
			"block3":  {[]int{2, 3, 3, 256}, 2*589824 + 2*256, 4 * 2 * 256},
			"pool":    {[]int{2, 1, 1, 256}, 0, 0},
			"flatten": {[]int{2, 256}, 0, 0},
			"head":    {[]int{2, spec.NumClasses}, head, 0},
		}
		for _, l := range s.Layers {
			w := want[l.Name]
			require.Equal(t, w.shape, l.OutputShape, l.Name)
			require.Equal(t, w.params, l.Params, l.Name)
			require.Equal(t, w.nt, l.NonTrainable, l.Name)
		}
	}
}

// airbenchStore builds airbench94 once on images (inference) and returns its store.
func airbenchStore(t *testing.T, m *Model, store *model.Store, images *tensors.Tensor) []float32 {
	t.Helper()
	exec, err := model.NewExec(labtest.Backend(t), store, func(scope *model.Scope, x *graph.Node) *graph.Node {
		return m.ModelFn(scope, nil, []*graph.Node{x})[0]
	})
	require.NoError(t, err)
	defer exec.Finalize()
	out, err := exec.Call(images)
	require.NoError(t, err)
	return tensors.MustCopyFlatData[float32](out[0])
}

// variableValues reads a float32 variable of the store.
func variableValues(t *testing.T, store *model.Store, path string) []float32 {
	t.Helper()
	v := store.GetVariable(path)
	require.NotNil(t, v, "%s: variables %v", path, testenv.SortedVariablePaths(store))
	value, err := v.Value()
	require.NoError(t, err)
	return tensors.MustCopyFlatData[float32](value)
}

// checkDirac checks a k x k convolution's weights w (HWIO) as airbench's init leaves them: the
// first cin outputs dirac_ (1 at the centre of their own input), the others uniform within
// bound, which it returns.
func checkDirac(t *testing.T, path string, w []float32, k, cin, cout int, bound float64) []float32 {
	var random []float32
	for y := range k {
		for x := range k {
			for i := range cin {
				for o := range cout {
					v := w[((y*k+x)*cin+i)*cout+o]
					switch {
					case o >= cin:
						require.LessOrEqual(t, math.Abs(float64(v)), bound, path)
						random = append(random, v)
					case y == k/2 && x == k/2 && i == o:
						require.Equal(t, float32(1), v, "%s: dirac_ at the centre", path)
					default:
						require.Equal(t, float32(0), v, "%s: dirac_ elsewhere", path)
					}
				}
			}
		}
	}
	return random
}

// TestAirbench94Init: the variables start as make_net94's: each convolution PyTorch's default
// U(±1/sqrt(fan_in)) with dirac_ on its first Cin output channels, the whitening bias at 0 (the
// whitening weights too are airbench's Conv, until WhiteningFilters replaces them), batch norm
// with weight 1, bias 0, running statistics 0 and 1, the head U(±1/16); the whitening weights and
// batch-norm weights are not trainable.
func TestAirbench94Init(t *testing.T) {
	m, err := NewModel(data.CIFAR10(), ArchAirbench94).Backend(labtest.Backend(t)).Done()
	require.NoError(t, err)
	store := testenv.SeededStore(t, 3)
	airbenchStore(t, m, store, tensors.FromShape(shapes.Make(dtypes.Float32, 1, 32, 32, 3)))
	convs := []struct {
		path                string
		k, cin, cout, fanIn int
	}{
		{"/airbench94/whiten/conv/weights", 2, 3, 24, 12},
		{"/airbench94/block1/conv1/conv/weights", 3, 24, 64, 216},
		{"/airbench94/block1/conv2/conv/weights", 3, 64, 64, 576},
		{"/airbench94/block2/conv1/conv/weights", 3, 64, 256, 576},
		{"/airbench94/block3/conv2/conv/weights", 3, 256, 256, 2304},
	}
	for _, c := range convs {
		w := variableValues(t, store, c.path)
		require.Len(t, w, c.k*c.k*c.cin*c.cout)
		bound := 1 / math.Sqrt(float64(c.fanIn))
		random := checkDirac(t, c.path, w, c.k, c.cin, c.cout, bound)
		if c.cin == c.cout {
			require.Empty(t, random, "%s: a square convolution starts as the identity", c.path)
			continue
		}
		// U(-b, b) has standard deviation b/sqrt(3); over n draws the sample's is within a few
		// 1/sqrt(n) of it (n >= 21*12 here: 5/sqrt(252) = 31%).
		var sq float64
		for _, v := range random {
			sq += float64(v) * float64(v)
		}
		std := math.Sqrt(sq / float64(len(random)))
		require.InEpsilon(t, bound/math.Sqrt(3), std, 5/math.Sqrt(float64(len(random))), c.path)
	}
	require.Equal(t, make([]float32, 24), variableValues(t, store, "/airbench94/whiten/conv/biases"))
	for _, w := range variableValues(t, store, "/airbench94/head/dense/weights") {
		require.LessOrEqual(t, math.Abs(float64(w)), 1.0/16)
	}
	require.Nil(t, store.GetVariable("/airbench94/head/dense/biases"), "make_net94's head has no bias")
	for name, want := range map[string]float32{"scale": 1, "offset": 0, "mean": 0, "variance": 1, "avg_weight": 0} {
		for _, v := range variableValues(t, store, "/airbench94/block2/norm1/batch_normalization/"+name) {
			require.Equal(t, want, v, name)
		}
	}
	for v := range store.IterVariables() {
		require.Equal(t, AirbenchGroup(v.Path()) != AirbenchNotTrained, v.Trainable,
			"%s: trainable exactly when airbench trains it", v.Path())
	}
}

// batchNormKinds are the batch-norm variants the test backend runs.
func batchNormKinds(backend compute.Backend) []BatchNormKind {
	if BatchNormFor(backend) == BatchNormBackendOps {
		return []BatchNormKind{BatchNormGraph, BatchNormBackendOps}
	}
	return []BatchNormKind{BatchNormGraph}
}

// pytorchBatchNorm is PyTorch's BatchNorm2d (no affine) in training mode on xs (n positions of c
// channels, channels last), in float64: its output, its input gradient for the output gradient
// dy, and the running mean and variance after one step (momentum 0.4, from 0 and 1).
func pytorchBatchNorm(xs, dy []float32, n, c int) (wantY, wantDX, runMean, runVar []float32) {
	wantY, wantDX = make([]float32, n*c), make([]float32, n*c)
	for ch := range c {
		var mean, vr, mdy, mdyx float64
		for i := range n {
			mean += float64(xs[i*c+ch]) / float64(n)
		}
		for i := range n {
			d := float64(xs[i*c+ch]) - mean
			vr += d * d / float64(n)
		}
		inv := 1 / math.Sqrt(vr+AirbenchBatchNormEpsilon)
		for i := range n {
			xh := (float64(xs[i*c+ch]) - mean) * inv
			wantY[i*c+ch] = float32(xh)
			mdy += float64(dy[i*c+ch]) / float64(n)
			mdyx += float64(dy[i*c+ch]) * xh / float64(n)
		}
		for i := range n {
			xh := (float64(xs[i*c+ch]) - mean) * inv
			wantDX[i*c+ch] = float32(inv * (float64(dy[i*c+ch]) - mdy - xh*mdyx))
		}
		runMean = append(runMean, float32(0.6*0+0.4*mean))
		runVar = append(runVar, float32(0.6*1+0.4*vr*float64(n)/float64(n-1)))
	}
	return wantY, wantDX, runMean, runVar
}

// TestAirbenchBatchNormIsPyTorchs: airbench's batch norm in training mode normalises with the
// batch's mean and biased variance, back-propagates through them (PyTorch's BatchNorm2d
// gradient), and moves the running statistics as PyTorch with momentum 0.4 does, the variance
// from the unbiased batch variance; in inference it normalises with the running statistics.
// Everything is compared with the formulas computed here in float64, for each batch-norm
// variant the backend runs.
// airbench94's initialisation program is small: its convolutions' dirac and keep masks are made
// in the graph. As constants they made it 20 MB of StableHLO text, which took seconds to write,
// hash for the compile cache's key and parse.
func TestAirbench94InitProgramIsSmall(t *testing.T) {
	cpu := testenv.XLACPUPluginOrSkip(t)
	b, err := backends.New("xla:" + cpu.Path)
	require.NoError(t, err)
	defer b.Finalize()
	m, err := NewModel(data.CIFAR10(), ArchAirbench94).Backend(b).Done()
	require.NoError(t, err)
	store := testenv.SeededStore(t, 3)
	mark := backends.ProgramMark()
	exec, err := model.NewExec(b, store, func(scope *model.Scope, x *graph.Node) *graph.Node {
		return m.ModelFn(scope, nil, []*graph.Node{x})[0]
	})
	require.NoError(t, err)
	defer exec.Finalize()
	_, err = exec.Call(tensors.FromShape(shapes.Make(dtypes.Float32, 1, 32, 32, 3)))
	require.NoError(t, err)
	var sizes []int
	for _, r := range backends.ProgramsSince(b, mark) {
		if r.Name == "VariableInitialization" {
			sizes = append(sizes, r.Bytes)
		}
	}
	require.Len(t, sizes, 1)
	require.Less(t, sizes[0], 256<<10, "the initialisation program's text")
}

func TestAirbenchBatchNormIsPyTorchs(t *testing.T) {
	const batch, h, w, c = 4, 3, 3, 2
	n := batch * h * w
	xs := testenv.SinData(n*c, 0.37, 2)
	for i := range xs {
		xs[i] += float32(i%c) * 3 // a different mean per channel
	}
	dy := testenv.SinData(n*c, 1.1, 1) // the loss sum(y*dy) has gradient dy at y
	for _, kind := range batchNormKinds(labtest.Backend(t)) {
		t.Run(kind.String(), func(t *testing.T) {
			nb := &netBuilder{m: &Model{BatchNorm: kind}}
			store := model.NewStore()
			run := func(training bool) [][]float32 {
				exec, err := model.NewExec(labtest.Backend(t), store, func(scope *model.Scope, x, d *graph.Node) []*graph.Node {
					store.SetTraining(x.Graph(), training)
					y := nb.airbenchBatchNorm(scope.In("bn"), x)
					if !training {
						return []*graph.Node{y}
					}
					return []*graph.Node{y, graph.Gradient(graph.ReduceAllSum(graph.Mul(y, d)), x)[0]}
				})
				require.NoError(t, err)
				defer exec.Finalize()
				out, err := exec.Call(tensors.FromFlatDataAndDimensions(xs, batch, h, w, c),
					tensors.FromFlatDataAndDimensions(dy, batch, h, w, c))
				require.NoError(t, err)
				var res [][]float32
				for _, o := range out {
					res = append(res, tensors.MustCopyFlatData[float32](o))
				}
				return res
			}
			got := run(true)
			wantY, wantDX, runMean, runVar := pytorchBatchNorm(xs, dy, n, c)
			testenv.RequireClose(t, wantY, got[0], testenv.TolReorderOp, "normalised")
			testenv.RequireClose(t, wantDX, got[1], testenv.TolReorderOp, "d/dx")
			prefix := "/bn/batch_normalization/"
			testenv.RequireClose(t, runMean, variableValues(t, store, prefix+"mean"), testenv.TolReorderOp, "running_mean")
			testenv.RequireClose(t, runVar, variableValues(t, store, prefix+"variance"), testenv.TolReorderOp, "running_var")
			require.Equal(t, []float32{1, 1}, variableValues(t, store, prefix+"avg_weight"), "num_batches_tracked")

			inference := run(false)[0]
			wantInf := make([]float32, n*c)
			for i := range n * c {
				ch := i % c
				wantInf[i] = float32((float64(xs[i]) - float64(runMean[ch])) / math.Sqrt(float64(runVar[ch])+AirbenchBatchNormEpsilon))
			}
			testenv.RequireClose(t, wantInf, inference, testenv.TolReorderOp, "inference")
		})
	}
}

// TestAirbench94BF16CloseToF32: with the same seeded weights, airbench94's bf16-mixed logits
// differ from its float32 ones by a relative L2 within testenv.Bf16Tolerance of its 8 product
// layers (the whitening convolution, six 3x3 convolutions and the head), times 1.13 for each of
// its 7 GELUs (GELU's slope reaches 1.13, where the bound assumes 1-Lipschitz activations), and
// are not identical (bfloat16 really ran).
func TestAirbench94BF16CloseToF32(t *testing.T) {
	backend := labtest.Backend(t)
	m, err := NewModel(data.CIFAR10(), ArchAirbench94).Backend(backend).Done()
	require.NoError(t, err)
	images := tensors.FromFlatDataAndDimensions(testenv.SinData(4*data.ImageBytes, 0.0137, 1), 4, 32, 32, 3)
	store := testenv.SeededStore(t, testenv.SpreadSeed(t, 5))
	logits := map[Precision][]float32{}
	for _, p := range []Precision{PrecisionF32, PrecisionBF16Mixed} {
		m.Precision = p
		out, err := m.Logits(backend, store, images)
		require.NoError(t, err)
		require.Equal(t, dtypes.Float32, out.DType())
		logits[p] = tensors.MustCopyFlatData[float32](out)
	}
	low, high := testenv.Bf16Tolerance(8)
	d := testenv.NormRelDiff(nil, logits[PrecisionF32], logits[PrecisionBF16Mixed])
	require.Greater(t, d, low, "bf16-mixed logits equal the f32 ones: bfloat16 did not run")
	testenv.RequireSpread(t, "logits", d, high*math.Pow(1.13, 7))
}
