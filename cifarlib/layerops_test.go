package cifarlib

import (
	"fmt"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"
)

// TestIm2colConvolutionMatchesConvolve compares im2colConvolution with graph.Convolve(...).PadSame()
// (the op cifarlib's layers use on XLA) on the test backend: the output, its gradient with
// respect to the input and with respect to the kernel, for the kernel sizes and strides the
// architectures use, on even and odd image sizes, "same"-padded and unpadded. (For even kernel
// sizes the input gradient is left out: GoMLX's (v0.28.3 to v0.28.16: gomlx #459 fixed input
// dilation, not this) input gradient of an even-sized convolution, PadSame or NoPadding, is
// shifted by one pixel, checked against finite differences, where im2col's agrees with them;
// bench/upstream-gomlx-even-conv-gradient.md has the cause and the fix, for upstream. The models' only even kernel is airbench94's 2x2
// whitening convolution, the first layer, whose input gradient is never used.)
func TestIm2colConvolutionMatchesConvolve(t *testing.T) {
	for _, tc := range []struct {
		kernel, stride, h, w, cin, cout int
		valid                           bool // unpadded: NoPadding and im2colConvolutionPadded(..., 0, 0)
	}{
		{3, 1, 8, 8, 3, 4, false},   // cnn and the ResNet 3x3 convolutions
		{3, 2, 8, 8, 4, 6, false},   // first convolution of a ResNet stage
		{1, 2, 8, 8, 4, 6, false},   // ResNet-18's 1x1 projection shortcut
		{1, 1, 5, 3, 2, 3, false},   // 1x1 without stride
		{3, 2, 7, 5, 2, 3, false},   // odd sizes with stride 2
		{3, 1, 1, 1, 2, 2, false},   // a single pixel: only the kernel's centre sees data
		{5, 3, 9, 10, 2, 2, false},  // larger kernel and stride
		{3, 1, 32, 32, 3, 2, false}, // CIFAR-sized input
		{2, 1, 32, 32, 3, 4, true},  // airbench94's whitening convolution (2x2, unpadded: 31x31 out)
		{3, 2, 9, 8, 2, 3, true},    // unpadded with stride
	} {
		t.Run(fmt.Sprintf("k%d_s%d_%dx%d_%d-%d_valid%t", tc.kernel, tc.stride, tc.h, tc.w, tc.cin, tc.cout, tc.valid), func(t *testing.T) {
			const batch = 2
			x := tensors.FromFlatDataAndDimensions(testenv.SinData(batch*tc.h*tc.w*tc.cin, 0.37, 1), batch, tc.h, tc.w, tc.cin)
			k := tensors.FromFlatDataAndDimensions(testenv.SinData(tc.kernel*tc.kernel*tc.cin*tc.cout, 0.71, 0.3),
				tc.kernel, tc.kernel, tc.cin, tc.cout)
			run := func(conv func(x, k *graph.Node) *graph.Node) [][]float32 {
				exec := graph.MustNewExec(labtest.Backend(t), func(x, k *graph.Node) []*graph.Node {
					y := conv(x, k)
					// A loss that weighs every output differently, so misplaced outputs show.
					w := graph.Sin(graph.Iota(x.Graph(), y.Shape(), 3))
					loss := graph.ReduceAllSum(graph.Mul(graph.Add(y, w), y))
					grads := graph.Gradient(loss, x, k)
					return []*graph.Node{y, grads[0], grads[1]}
				})
				defer exec.Finalize()
				var out [][]float32
				for _, r := range exec.MustExec(x, k) {
					out = append(out, tensors.MustCopyFlatData[float32](r))
				}
				return out
			}
			want := run(func(x, k *graph.Node) *graph.Node {
				if tc.valid {
					return graph.Convolve(x, k).StridePerAxis(tc.stride, tc.stride).NoPadding().Done()
				}
				return graph.Convolve(x, k).StridePerAxis(tc.stride, tc.stride).PadSame().Done()
			})
			got := run(func(x, k *graph.Node) *graph.Node {
				if tc.valid {
					return im2colConvolutionPadded(x, k, tc.stride, 0, 0)
				}
				return im2colConvolution(x, k, tc.stride)
			})
			for i, what := range []string{"output", "d/dx", "d/dkernel"} {
				if what == "d/dx" && tc.kernel%2 == 0 {
					// GoMLX's input gradient of an even-sized convolution is shifted (see above);
					// airbench94's 2x2 whitening convolution is the first layer, whose input
					// gradient is never used.
					continue
				}
				testenv.RequireClose(t, want[i], got[i], testenv.TolReorderOp, what)
			}
		})
	}
}

func TestLayerOpsFor(t *testing.T) {
	require.Equal(t, LayerOpsMatmul, LayerOpsFor(goBackend()))
	require.Equal(t, LayerOpsNative, LayerOpsFor(nil))
	if b := labtest.Backend(t); b.String() != backends.Go {
		require.Equal(t, LayerOpsNative, LayerOpsFor(b), "XLA backends keep their convolution op")
	}
	require.Equal(t, "matmul", LayerOpsMatmul.String())
	require.Equal(t, "native", LayerOpsNative.String())
	m, err := NewModel(data.CIFAR10(), ArchCNN).Backend(goBackend()).Done()
	require.NoError(t, err)
	require.Equal(t, LayerOpsMatmul, m.LayerOps)
	m, err = NewModel(data.CIFAR10(), ArchCNN).Done()
	require.NoError(t, err)
	require.Equal(t, LayerOpsNative, m.LayerOps)
	m, err = NewModel(data.CIFAR10(), ArchCNN).Backend(goBackend()).LayerOps(LayerOpsNative).Done()
	require.NoError(t, err)
	require.Equal(t, LayerOpsNative, m.LayerOps)
}

// TestConvolutionKindsShareVariables runs each convolutional architecture with LayerOpsNative,
// then with LayerOpsMatmul on the same variable store: the im2col model must find every
// variable the op model created (same names and shapes, no new ones) and give the same logits.
func TestLayerOpsShareVariables(t *testing.T) {
	for _, arch := range []string{ArchCNN, ArchResNet20, ArchAirbench94, ArchResNet18} {
		t.Run(arch, func(t *testing.T) {
			if arch == ArchResNet18 && testing.Short() {
				t.Skip("resnet18 forward is slow on the go backend")
			}
			images := tensors.FromFlatDataAndDimensions(testenv.SinData(2*data.ImageBytes, 0.0137, 1), 2, 32, 32, 3)
			store := testenv.SeededStore(t, testenv.SpreadSeed(t, 0))
			logits := func(kind LayerOps) ([]float32, []string) {
				m, err := NewModel(data.CIFAR10(), arch).Backend(labtest.Backend(t)).LayerOps(kind).Done()
				require.NoError(t, err)
				exec, err := model.NewExec(labtest.Backend(t), store, func(scope *model.Scope, x *graph.Node) *graph.Node {
					return m.ModelFn(scope, nil, []*graph.Node{x})[0]
				})
				require.NoError(t, err)
				defer exec.Finalize()
				out, err := exec.Call(images)
				require.NoError(t, err)
				return tensors.MustCopyFlatData[float32](out[0]), testenv.SortedVariablePaths(store)
			}
			want, vars := logits(LayerOpsNative)
			got, varsAfter := logits(LayerOpsMatmul)
			require.Equal(t, vars, varsAfter, "the matmul model created variables the native model does not have")
			testenv.RequireClose(t, want, got, testenv.TolReorder, "logits") // A forward pass: continuous across kinks.
		})
	}
}

// TestMaxPool2x2MatchesMaxPool compares the matmul lowering's k x k max-pool (reshape +
// ReduceMax, the rows and columns past the last whole window dropped) with graph.MaxPool: output
// and input gradient, on inputs without ties in any window, for poolCases.
func TestMaxPool2x2MatchesMaxPool(t *testing.T) {
	for _, tc := range poolCases {
		dims := tc.dims
		t.Run(fmt.Sprintf("%v_k%d", dims, tc.k), func(t *testing.T) {
			n := dims[0] * dims[1] * dims[2] * dims[3]
			x := tensors.FromFlatDataAndDimensions(testenv.SinData(n, 1.3, 1), dims...)
			wantY, wantDX := poolAndGradient(t, x, func(x *graph.Node) *graph.Node { return graph.MaxPool(x).Window(tc.k).Done() })
			nb := &netBuilder{m: &Model{LayerOps: LayerOpsMatmul}}
			y, dx := poolAndGradient(t, x, func(x *graph.Node) *graph.Node { return nb.maxPool(x, tc.k) })
			require.Equal(t, wantY, y, "output")
			testenv.RequireClose(t, wantDX, dx, testenv.TolReorderOp, "d/dx")
		})
	}
}

// TestLayerOpsSameGradients computes the loss gradients of every variable of cnn and resnet20
// with LayerOpsNative and with LayerOpsMatmul on the same variable store: they must agree (the
// matmul lowering also reorders cnn's ReLU and max-pool, which changes nothing without ties),
// normwise within kinkTolerance: the two lowerings sum in different orders, so a pre-activation
// within rounding of zero may take the other ReLU branch on one side.
func TestLayerOpsSameGradients(t *testing.T) {
	for _, arch := range []string{ArchCNN, ArchResNet20, ArchAirbench94} {
		t.Run(arch, func(t *testing.T) {
			if arch == ArchAirbench94 && !backends.IsGoBackend(labtest.Backend(t)) {
				// The matmul lowering runs only on the pure-Go backend. On XLA CPU its max-pool
				// gradient (ReduceMax's, an indicator of x - max >= 0) loses about half the
				// maxima when x is computed by element-wise ops, as airbench94's batch norm and
				// GELU before each pool are (measured: 143 of 288 for x = 1.7·input, none lost
				// on the pure-Go backend), presumably because XLA fuses x's recomputation into
				// the subtraction (an FMA keeps the unrounded product).
				t.Skip("the matmul lowering's max-pool gradient is for the pure-Go backend")
			}
			images := tensors.FromFlatDataAndDimensions(testenv.SinData(4*data.ImageBytes, 0.0173, 1), 4, 32, 32, 3)
			labels := tensors.FromFlatDataAndDimensions([]int32{3, 8, 0, 9}, 4, 1)
			store := testenv.SeededStore(t, testenv.SpreadSeed(t, 0))
			grads := func(kind LayerOps) (names []string, values [][]float32) {
				// The executor runs in inference mode, where the backend's fused batch norm (XLA)
				// has no gradient: use the graph-op batch norm, which has one on every backend.
				m, err := NewModel(data.CIFAR10(), arch).Backend(labtest.Backend(t)).LayerOps(kind).BatchNorm(BatchNormGraph).Done()
				require.NoError(t, err)
				exec, err := model.NewExec(labtest.Backend(t), store, func(scope *model.Scope, x, y *graph.Node) []*graph.Node {
					logits := m.ModelFn(scope, nil, []*graph.Node{x})
					lossValue := m.LossFn(GuardOff)([]*graph.Node{y}, logits)
					var vars []*graph.Node
					for v := range scope.IterVariables() {
						if v.Trainable {
							names = append(names, v.Path())
							vars = append(vars, v.NodeValue(x.Graph()))
						}
					}
					return graph.Gradient(lossValue, vars...)
				})
				require.NoError(t, err)
				defer exec.Finalize()
				out, err := exec.Call(images, labels)
				require.NoError(t, err)
				for _, g := range out {
					values = append(values, tensors.MustCopyFlatData[float32](g))
				}
				return names, values
			}
			wantNames, want := grads(LayerOpsNative)
			gotNames, got := grads(LayerOpsMatmul)
			require.Equal(t, wantNames, gotNames)
			require.NotEmpty(t, want)
			// Through ReLUs and max-pools: normwise, with the kink tolerance of the smallest layers
			// at batch 4 (8x8; airbench94's last group, 3x3, where GELU has no kink but a
			// max-pool tie can go the other way).
			minHW := map[string]int{ArchCNN: 8 * 8, ArchResNet20: 8 * 8, ArchAirbench94: 3 * 3}[arch]
			testenv.RequireAllNormClose(t, wantNames, want, got, testenv.KinkTolerance(4, minHW), "gradient")
		})
	}
}
