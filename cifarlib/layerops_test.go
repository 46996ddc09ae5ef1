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
// architectures use, on even and odd image sizes. (Even kernel sizes are left out: GoMLX
// v0.28.3's input gradient of an even-sized PadSame convolution is shifted by one pixel, checked
// against finite differences; the models use only 1x1 and 3x3 kernels.)
func TestIm2colConvolutionMatchesConvolve(t *testing.T) {
	for _, tc := range []struct{ kernel, stride, h, w, cin, cout int }{
		{3, 1, 8, 8, 3, 4},   // cnn and the ResNet 3x3 convolutions
		{3, 2, 8, 8, 4, 6},   // first convolution of a ResNet stage
		{1, 2, 8, 8, 4, 6},   // ResNet-18's 1x1 projection shortcut
		{1, 1, 5, 3, 2, 3},   // 1x1 without stride
		{3, 2, 7, 5, 2, 3},   // odd sizes with stride 2
		{3, 1, 1, 1, 2, 2},   // a single pixel: only the kernel's centre sees data
		{5, 3, 9, 10, 2, 2},  // larger kernel and stride
		{3, 1, 32, 32, 3, 2}, // CIFAR-sized input
	} {
		t.Run(fmt.Sprintf("k%d_s%d_%dx%d_%d-%d", tc.kernel, tc.stride, tc.h, tc.w, tc.cin, tc.cout), func(t *testing.T) {
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
				return graph.Convolve(x, k).StridePerAxis(tc.stride, tc.stride).PadSame().Done()
			})
			got := run(func(x, k *graph.Node) *graph.Node { return im2colConvolution(x, k, tc.stride) })
			for i, what := range []string{"output", "d/dx", "d/dkernel"} {
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
	for _, arch := range []string{ArchCNN, ArchResNet20, ArchResNet18} {
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

// TestMaxPool2x2MatchesMaxPool compares the matmul lowering's 2x2 max-pool (reshape + ReduceMax)
// with graph.MaxPool: output and input gradient, on inputs without ties in any window; odd sizes
// fall back to graph.MaxPool.
func TestMaxPool2x2MatchesMaxPool(t *testing.T) {
	for _, dims := range [][]int{{2, 8, 8, 3}, {1, 4, 6, 2}, {2, 5, 4, 1}} {
		t.Run(fmt.Sprint(dims), func(t *testing.T) {
			n := dims[0] * dims[1] * dims[2] * dims[3]
			x := tensors.FromFlatDataAndDimensions(testenv.SinData(n, 1.3, 1), dims...)
			run := func(pool func(x *graph.Node) *graph.Node) [][]float32 {
				exec := graph.MustNewExec(labtest.Backend(t), func(x *graph.Node) []*graph.Node {
					y := pool(x)
					w := graph.Cos(graph.Iota(x.Graph(), y.Shape(), 2))
					return []*graph.Node{y, graph.Gradient(graph.ReduceAllSum(graph.Mul(y, w)), x)[0]}
				})
				defer exec.Finalize()
				var out [][]float32
				for _, r := range exec.MustExec(x) {
					out = append(out, tensors.MustCopyFlatData[float32](r))
				}
				return out
			}
			want := run(func(x *graph.Node) *graph.Node { return graph.MaxPool(x).Window(2).Done() })
			nb := &netBuilder{m: &Model{LayerOps: LayerOpsMatmul}}
			got := run(nb.maxPool2x2)
			require.Equal(t, want[0], got[0], "output")
			testenv.RequireClose(t, want[1], got[1], testenv.TolReorderOp, "d/dx")
		})
	}
}

// TestLayerOpsSameGradients computes the loss gradients of every variable of cnn and resnet20
// with LayerOpsNative and with LayerOpsMatmul on the same variable store: they must agree (the
// matmul lowering also reorders cnn's ReLU and max-pool, which changes nothing without ties),
// normwise within kinkTolerance: the two lowerings sum in different orders, so a pre-activation
// within rounding of zero may take the other ReLU branch on one side.
func TestLayerOpsSameGradients(t *testing.T) {
	for _, arch := range []string{ArchCNN, ArchResNet20} {
		t.Run(arch, func(t *testing.T) {
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
			// Through ReLUs: normwise, with the kink tolerance of the 8x8 layers at batch 4.
			testenv.RequireAllNormClose(t, wantNames, want, got, testenv.KinkTolerance(4, 8*8), "gradient")
		})
	}
}
