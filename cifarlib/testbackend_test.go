package cifarlib

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/gomlx/compute"
	"github.com/stretchr/testify/require"
)

// sharedTestBackend is created once per test binary by testBackend.
var sharedTestBackend = sync.OnceValues(func() (compute.Backend, error) {
	os.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	name := strings.TrimSpace(os.Getenv(compute.ConfigEnvVar))
	if name == "" || strings.EqualFold(name, BackendAuto) {
		name = BackendGo
	}
	return NewBackend(name)
})

// testBackend returns the backend the model, loss, guard and training tests run on:
// $GOMLX_BACKEND given to NewBackend ("go", "cpu", "xla:/abs/path/pjrt_c_api_cpu_plugin.so",
// "cuda", ...), or the pure-Go backend when it is unset or "auto". CI runs these tests once
// with GOMLX_BACKEND=go and once with the XLA CPU plugin. The backend is shared by all tests;
// a backend that cannot be created fails the test.
func testBackend(t testing.TB) compute.Backend {
	t.Helper()
	b, err := sharedTestBackend()
	require.NoError(t, err, "creating the test backend from $%s=%q", compute.ConfigEnvVar, os.Getenv(compute.ConfigEnvVar))
	return b
}

// xlaCPUPluginOrSkip returns the installed XLA CPU plugin; without one it skips the test, or
// fails it when CI asks for the plugin (CI=true and CIFARLAB_REQUIRE_XLA_CPU=1).
func xlaCPUPluginOrSkip(t *testing.T) plugins.Location {
	t.Helper()
	loc, err := plugins.FindXLACPU("")
	require.NoError(t, err)
	if loc.Path == "" {
		if os.Getenv("CI") == "true" && os.Getenv("CIFARLAB_REQUIRE_XLA_CPU") == "1" {
			t.Fatalf("CIFARLAB_REQUIRE_XLA_CPU=1 but no XLA CPU plugin was found: %s", XLACPUInstallHint)
		}
		t.Skip("the XLA CPU plugin is not installed (pip install --no-deps lammps-jax-pjrt-cpu into REPO/.venv)")
	}
	return loc
}
