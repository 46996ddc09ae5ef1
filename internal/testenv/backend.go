package testenv

import (
	"os"
	"testing"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/stretchr/testify/require"
)

// XLACPUPluginOrSkip returns the installed XLA CPU plugin; without one it skips the test, or
// fails it when CI asks for the plugin (CI=true and CIFARLAB_REQUIRE_XLA_CPU=1).
func XLACPUPluginOrSkip(t *testing.T) plugins.Location {
	t.Helper()
	loc, err := plugins.FindXLACPU("")
	require.NoError(t, err)
	if loc.Path == "" {
		if os.Getenv("CI") == "true" && os.Getenv("CIFARLAB_REQUIRE_XLA_CPU") == "1" {
			t.Fatalf("CIFARLAB_REQUIRE_XLA_CPU=1 but no XLA CPU plugin was found: %s", plugins.XLACPUInstallHint)
		}
		t.Skip("the XLA CPU plugin is not installed (pip install --no-deps lammps-jax-pjrt-cpu into REPO/.venv)")
	}
	return loc
}

// NoBF16Backend is a real backend whose capabilities leave out the bfloat16 dtype, as a backend
// without bfloat16 kernels would report.
type NoBF16Backend struct{ compute.Backend }

// Capabilities are the wrapped backend's, without bfloat16.
func (b NoBF16Backend) Capabilities() compute.Capabilities {
	caps := b.Backend.Capabilities().Clone()
	delete(caps.DTypes, dtypes.BFloat16)
	return caps
}
