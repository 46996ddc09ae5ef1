package optimizers

import (
	"strconv"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/stretchr/testify/require"
)

// TestTriangleMatchesAirbench compares the triangle schedule, on the host and in the graph,
// with airbench's own triangle() (PyTorch, float32) for several run lengths: the same float32
// operations, so the same values exactly.
func TestTriangleMatchesAirbench(t *testing.T) {
	fx := loadAirbenchFixture(t)
	backend := labtest.Backend(t)
	for _, steps := range []int{2, 4, 5, 7, 10, 97, 480} {
		want := fx.Triangle[strconv.Itoa(steps)]
		require.Len(t, want, steps+1)
		tr := airbenchTriangle(steps)
		xs := make([]int32, steps+1)
		for x := range xs {
			xs[x] = int32(x)
			require.Equal(t, float32(want[x]), tr.at(x), "steps %d, step %d", steps, x)
		}
		got := graph.MustExecOnce(backend, func(x *graph.Node) *graph.Node { return tr.factor(x) }, xs)
		require.Equal(t, dtypes.Float32, got.DType())
		for x, v := range got.Value().([]float32) {
			require.Equal(t, float32(want[x]), v, "in the graph: steps %d, step %d", steps, x)
		}
	}
	// The values the table pins: start, peak and end of 480 steps (airbench94's 9.9 epochs of
	// 48 steps would be 476; the peak is int(0.23*480) = 110).
	tr := airbenchTriangle(480)
	require.Equal(t, 110, tr.peakStep)
	require.Equal(t, float32(0.2), tr.at(0))
	require.InDelta(t, 1, tr.at(110), 1e-6)
	require.InDelta(t, 0.07, tr.at(480), 1e-6)
	require.Equal(t, float32(1), airbenchTriangle(2).at(0), "2 steps: int(0.46) = 0, so the first step is the peak, as airbench's")
}
