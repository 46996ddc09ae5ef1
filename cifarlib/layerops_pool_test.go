package cifarlib

import (
	"fmt"
	"math"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/internal/testenv"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"
)

// poolCases are the max-pools the tests compare: 2x2 pools, airbench94's odd sizes (31 -> 15,
// 15 -> 7, 7 -> 3) and its final 3x3 pool.
var poolCases = []struct {
	dims []int
	k    int
}{{[]int{2, 8, 8, 3}, 2}, {[]int{1, 4, 6, 2}, 2}, {[]int{2, 5, 4, 1}, 2}, {[]int{1, 31, 31, 2}, 2}, {[]int{2, 15, 15, 3}, 2},
	{[]int{2, 7, 7, 3}, 2}, {[]int{2, 3, 3, 4}, 3}, {[]int{1, 7, 8, 2}, 3}}

// poolAndGradient runs pool on x and returns its output and the gradient of sum(y * w) with
// respect to x, for w = cos(iota over the output's width axis) (a different weight per column).
func poolAndGradient(t *testing.T, x *tensors.Tensor, pool func(x *graph.Node) *graph.Node) (y, dx []float32) {
	exec := graph.MustNewExec(labtest.Backend(t), func(x *graph.Node) []*graph.Node {
		y := pool(x)
		w := graph.Cos(graph.Iota(x.Graph(), y.Shape(), 2))
		return []*graph.Node{y, graph.Gradient(graph.ReduceAllSum(graph.Mul(y, w)), x)[0]}
	})
	defer exec.Finalize()
	out := exec.MustExec(x)
	return tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](out[1])
}

// torchMaxPool is PyTorch's CPU max_pool2d(k) and its backward on the host, for x [B, H, W, C]
// in NHWC order: each window's output is its first maximum scanning row by row (a later element
// replaces it only when strictly greater), and the gradient w[b, i, j, c] goes to that element.
func torchMaxPool(x []float32, dims []int, k int) (y, dx []float32) {
	b, h, w, c := dims[0], dims[1], dims[2], dims[3]
	oh, ow := h/k, w/k
	y, dx = make([]float32, b*oh*ow*c), make([]float32, len(x))
	for n := range b {
		for i := range oh {
			for j := range ow {
				for ch := range c {
					best := -1
					for di := range k {
						for dj := range k {
							at := ((n*h+i*k+di)*w+j*k+dj)*c + ch
							if best < 0 || x[at] > x[best] {
								best = at
							}
						}
					}
					y[((n*oh+i)*ow+j)*c+ch] = x[best]
					dx[best] += float32(math.Cos(float64(j)))
				}
			}
		}
	}
	return y, dx
}

// TestMaxPoolSelectMatchesTorch: maxPoolSelect's output and input gradient equal PyTorch's
// max-pool rule exactly, on inputs without ties (where graph.MaxPool must agree too) and on
// inputs made of a few integer values (ties in most windows, where the first maximum in row
// order takes the gradient), for poolCases.
func TestMaxPoolSelectMatchesTorch(t *testing.T) {
	for _, tc := range poolCases {
		for _, ties := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v_k%d_ties=%t", tc.dims, tc.k, ties), func(t *testing.T) {
				n := tc.dims[0] * tc.dims[1] * tc.dims[2] * tc.dims[3]
				values := testenv.SinData(n, 1.3, 1)
				if ties {
					for i, v := range values {
						values[i] = float32(math.Round(float64(2 * v))) // -2..2: five values
					}
				}
				x := tensors.FromFlatDataAndDimensions(values, tc.dims...)
				wantY, wantDX := torchMaxPool(values, tc.dims, tc.k)
				y, dx := poolAndGradient(t, x, func(x *graph.Node) *graph.Node { return maxPoolSelect(x, tc.k) })
				require.Equal(t, wantY, y, "output")
				require.Equal(t, wantDX, dx, "d/dx")
				if !ties {
					y, dx = poolAndGradient(t, x, func(x *graph.Node) *graph.Node { return graph.MaxPool(x).Window(tc.k).Done() })
					require.Equal(t, wantY, y, "graph.MaxPool's output")
					require.Equal(t, wantDX, dx, "graph.MaxPool's d/dx")
				}
			})
		}
	}
}
