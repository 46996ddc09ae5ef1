package labtest

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/gomlx/compute"
	"github.com/stretchr/testify/require"
)

// sharedTestBackend is created once per test binary by testBackend.
var sharedTestBackend = sync.OnceValues(func() (compute.Backend, error) {
	os.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	name := strings.TrimSpace(os.Getenv(compute.ConfigEnvVar))
	if name == "" || strings.EqualFold(name, backends.Auto) {
		name = backends.Go
	}
	return backends.New(name)
})

// testBackend returns the backend the model, loss, guard and training tests run on:
// $GOMLX_BACKEND given to backends.New ("go", "cpu", "xla:/abs/path/pjrt_c_api_cpu_plugin.so",
// "cuda", ...), or the pure-Go backend when it is unset or "auto". CI runs these tests once
// with GOMLX_BACKEND=go and once with the XLA CPU plugin. The backend is shared by all tests;
// a backend that cannot be created fails the test.
func Backend(t testing.TB) compute.Backend {
	t.Helper()
	b, err := sharedTestBackend()
	require.NoError(t, err, "creating the test backend from $%s=%q", compute.ConfigEnvVar, os.Getenv(compute.ConfigEnvVar))
	return b
}
