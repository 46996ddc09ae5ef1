package backends

import (
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/gobackend"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
	"github.com/stretchr/testify/require"
)

func TestGoBackendConfig(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{"", "ops_sequential"},
		{"  ", "ops_sequential"},
		{"parallelism=2", "parallelism=2,ops_sequential"},
		{"ops_parallel", "ops_parallel"},
		{"parallelism=4,ops_parallel", "parallelism=4,ops_parallel"},
		{"ops_sequential,dependency_order", "ops_sequential,dependency_order"},
	} {
		require.Equal(t, tc.want, goBackendConfig(tc.config), "config %q", tc.config)
	}
}

// goOpsExecutionType reads the Go backend's OpsExecutionType field (an int enum in compute's
// internal package: 0 dynamic, 1 parallel, 2 sequential).
func goOpsExecutionType(t *testing.T, b compute.Backend) int64 {
	t.Helper()
	v := reflect.ValueOf(b)
	require.Equal(t, reflect.Pointer, v.Kind(), "backend %T", b)
	field := v.Elem().FieldByName("OpsExecutionType")
	require.True(t, field.IsValid(), "%T has no OpsExecutionType field: compute's Go backend changed", b)
	return field.Int()
}

func TestNewBackendGoRunsOpsSequentially(t *testing.T) {
	const sequential, parallel = 2, 1
	for _, tc := range []struct {
		name string
		want int64
	}{
		{"go", sequential},
		{"go:parallelism=2", sequential},
		{"go:ops_parallel", parallel},
	} {
		b, err := New(tc.name)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, goOpsExecutionType(t, b), tc.name)
	}
}

// TestGoBackendManyConvolutionsDoNotDeadlock runs a graph of 16 independent convolutions on
// the Go backend with a 2-task worker pool. With compute v0.1.3 and v0.1.6's parallel ops executor this
// graph hangs (v0.1.14's finishes it) (two conv nodes hold both pool slots and wait for slots for their chunks; try
// "go:ops_parallel,parallelism=2"); New's sequential default must finish it.
func TestGoBackendManyConvolutionsDoNotDeadlock(t *testing.T) {
	b, err := New("go:parallelism=2")
	require.NoError(t, err)
	const branches = 16
	const deadlockTimeout = 3 * time.Minute
	done := make(chan error, 1)
	var got float32
	go func() {
		done <- exceptions.TryCatch[error](func() {
			exec := graph.MustNewExec(b, func(x *graph.Node) *graph.Node {
				var sum *graph.Node
				for i := range branches {
					k := graph.Ones(x.Graph(), shapes.Make(x.DType(), 3, 3, 8, 8))
					k = graph.MulScalar(k, float64(i+1))
					y := graph.Convolve(x, k).PadSame().Done() // [1, 16, 16, 8]: 2048 outputs
					if sum == nil {
						sum = y
					} else {
						sum = graph.Add(sum, y)
					}
				}
				return graph.ReduceAllSum(sum)
			})
			ones := make([]float32, 16*16*8)
			for i := range ones {
				ones[i] = 1
			}
			out := exec.MustExec(tensors.FromFlatDataAndDimensions(ones, 1, 16, 16, 8))[0]
			got = tensors.ToScalar[float32](out)
		})
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(deadlockTimeout):
		t.Fatalf("%d independent convolutions on the Go backend did not finish in %s: the parallel "+
			"ops executor deadlocked (NewBackend must configure %s)", branches, deadlockTimeout, goBackendDefaultOptions)
	}
	// Each output of an all-ones 16x16x8 image convolved with an all-ones 3x3x8x8 kernel (SAME
	// padding) counts the in-image neighbours times 8 input channels; summed over the 16x16
	// positions that is 8 * (14*14*9 + 4*14*6 + 4*4) = 8 * 2116 per output channel, 8 output
	// channels, and the 16 kernels scale it by 1+2+...+16 = 136.
	require.Equal(t, float32(8*2116*8*136), got)
}

func TestIsGoBackend(t *testing.T) {
	require.Equal(t, gobackend.BackendName, Go, "IsGoBackend compares String() with BackendGo")
	for _, name := range []string{Go, "cpu"} {
		b, err := New(name)
		require.NoError(t, err)
		require.Equal(t, b.String() == gobackend.BackendName, IsGoBackend(b), name)
	}
	require.False(t, IsGoBackend(nil))
}

// TestNoGoBackendTag builds cifarlib with NoGoBackendTag, as the XLA notebook kernels build
// cells: none of the pure-Go backend's packages is linked, and New("go") is a
// *BackendError that says why and how to link it back.
func TestNoGoBackendTag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program (-short)")
	}
	deps := func(tags ...string) string {
		out, err := exec.Command("go", append(append([]string{"list", "-deps"}, tags...), "../nb")...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	const pkg = "github.com/gomlx/compute/gobackend\n"
	require.Contains(t, deps(), pkg, "without the tag cifarlib/nb links the pure-Go backend")
	tagged := deps("-tags", NoGoBackendTag)
	require.NotContains(t, tagged, pkg)
	require.NotContains(t, tagged, "github.com/gomlx/compute/internal/gobackend")

	out, err := exec.Command("go", "run", "-tags", NoGoBackendTag, "./testdata/nogobackend").CombinedOutput()
	require.NoError(t, err, "%s", out)
	want := func(name string) string {
		return name + `: BackendError true: backend "` + name + `" unavailable: the pure-Go backend is not linked into ` +
			"this program (built with -tags cifarlab_nogobackend, as the XLA notebook kernels build cells so that they " +
			"link faster): use the XLA backend the kernel sets in GOMLX_BACKEND, or link the pure-Go backend back " +
			"into the cells with the cell line `%goflags -tags=`\n"
	}
	require.Equal(t, want("go")+want("go:ops_parallel"), string(out))
}

// TestGoBackendFeedsVariables: a graph that is not a training step reads a variable's current
// value on every call, on the pure-Go backend too (goCapabilities): compiled once, it sees the
// value set after the compile, not the one it was compiled with.
func TestGoBackendFeedsVariables(t *testing.T) {
	b, err := New(Go)
	require.NoError(t, err)
	store := model.NewStore()
	v := store.VariableWithValue("/w", float32(1))
	exec, err := model.NewExec(b, store, func(scope *model.Scope, x *graph.Node) *graph.Node {
		return graph.Mul(x, v.NodeValue(x.Graph()))
	})
	require.NoError(t, err)
	for _, w := range []float32{1, 3, -2} {
		require.NoError(t, v.SetValue(tensors.FromValue(w)))
		out, err := exec.Exec(float32(2))
		require.NoError(t, err)
		require.Equal(t, 2*w, tensors.ToScalar[float32](out[0]), "the variable's value %v", w)
	}
	require.False(t, b.Capabilities().PreferConstantsForVariables)
}
