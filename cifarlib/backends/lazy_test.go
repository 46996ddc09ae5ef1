package backends

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/stretchr/testify/require"
)

// mappedPlugin reports whether the shared object path is mapped into this process
// (/proc/self/maps): a PJRT plugin is loaded when its first client is created.
func mappedPlugin(t *testing.T, path string) bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	return strings.Contains(string(maps), path)
}

// TestLazyCreatesTheClientOnFirstUse: Lazy("cpu") on XLA's CPU plugin names the backend, its
// plugin and capabilities, and builds a model's choices (IsGoBackend) without a PJRT client; the
// first computation creates exactly one, through the lazy backend, with the result New's backend
// gives. The plugin's shared object is loaded only then.
func TestLazyCreatesTheClientOnFirstUse(t *testing.T) {
	loc := testenv.XLACPUPluginOrSkip(t)
	if mappedPlugin(t, loc.Path) {
		t.Skip("another test of this process created an XLA CPU client already")
	}
	before := Clients()
	b, err := Lazy("cpu")
	require.NoError(t, err)
	require.Equal(t, "xla:cpu (XLA CPU plugin)", Name(b))
	require.Equal(t, loc.Path, Plugin(b))
	require.False(t, IsGoBackend(b))
	require.Equal(t, "xla", b.String())
	require.True(t, b.Capabilities().DTypes[dtypes.BFloat16])
	require.False(t, b.IsFinalized())
	require.Equal(t, before, Clients(), "nothing computed: no client")
	require.False(t, mappedPlugin(t, loc.Path), "nothing computed: the plugin is not loaded")

	square := graph.MustNewExec(b, func(x *graph.Node) *graph.Node { return graph.Mul(x, x) })
	got := square.MustExec([]float32{1, 2, 3})[0]
	require.Equal(t, []float32{1, 4, 9}, got.Value())
	require.Equal(t, before+1, Clients(), "the first computation created one client")
	// Its output goes back in, as a training step's variables do: the same backend's tensor.
	again := square.MustExec(got)[0]
	require.Equal(t, []float32{1, 16, 81}, again.Value())
	own, err := again.Backend()
	require.NoError(t, err)
	require.Same(t, b, own, "the tensors of a lazy backend are its own")
	require.True(t, mappedPlugin(t, loc.Path))
	require.Positive(t, b.NumDevices())
	require.Equal(t, "xla:cpu (XLA CPU plugin)", Name(b))
	require.Equal(t, before+1, Clients(), "and only one")
	b.Finalize()
	require.True(t, b.IsFinalized())
}

// TestLazyChecksNow: what New refuses before it creates anything, Lazy refuses at once, with the
// same error; the pure-Go backend, which holds no client, is created at once.
func TestLazyChecksNow(t *testing.T) {
	_, err := Lazy("tpu")
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.Equal(t, "unknown backend name", be.Missing)

	if !plugins.HasNvidiaGPU() {
		_, err = Lazy("cuda")
		require.True(t, errors.Is(err, ErrNoGPU), "no GPU: refused now, as New does: %v", err)
	}
	before := Clients()
	b, err := Lazy("go")
	if errors.Is(err, ErrBackend) { // a program built without the pure-Go backend
		t.Skip(err)
	}
	require.NoError(t, err)
	require.Equal(t, "go (pure Go, CPU)", Name(b))
	require.True(t, IsGoBackend(b))
	require.Equal(t, before, Clients())
}

// TestLazyFinalizedUncreated: finalizing a lazy backend that was never used creates nothing.
func TestLazyFinalizedUncreated(t *testing.T) {
	testenv.XLACPUPluginOrSkip(t)
	before := Clients()
	b, err := Lazy("xla:cpu")
	require.NoError(t, err)
	b.Finalize()
	require.True(t, b.IsFinalized())
	require.Equal(t, before, Clients())
}
