package backends

import (
	"strings"
)

// goBackendDefaultOptions are the options New adds to the pure-Go backend's configuration
// unless the caller chooses an ops execution mode itself ("go:ops_parallel").
//
// Why: in github.com/gomlx/compute v0.1.3 (and still v0.1.6; v0.1.14 finishes
// TestGoBackendManyConvolutionsDoNotDeadlock's graph, but no full training run has been measured
// and tested on it) the Go backend's parallel ops executor runs every graph
// node as a task of its worker pool (default size 2 x GOMAXPROCS), and convolution, reduce-window,
// select-and-scatter and matmul nodes then wait for more tasks of the same pool for their own
// chunks. When every pool slot holds such a node, each waits for a slot the others hold: the step
// never finishes and uses no CPU. A ResNet backward pass has enough independent convolutions to
// fill 4 slots; on a loaded 2-core CI machine TestTrainStepEachArchitecture hung until the
// 75-minute test timeout, and "go:parallelism=2" hangs on the first conv step. With ops run one
// after another on the calling goroutine, pool tasks are leaves that never wait on the pool, so
// the deadlock cannot happen; large ops keep their internal parallelism.
const goBackendDefaultOptions = "ops_sequential"

// NoGoBackendTag is the build tag that leaves the pure-Go backend (github.com/gomlx/compute/gobackend,
// 2.2 MB of code) out of a program: New("go") then returns a *BackendError saying so.
// The XLA notebook kernels build cells with it, because every cell is linked again as a new
// program and that backend is the largest part of cifarlib a cell on XLA never runs
// (bench/RESULTS-cells.md); a cell links it back with `%goflags -tags=`.
const NoGoBackendTag = "cifarlab_nogobackend"

// goBackendConfig returns config with goBackendDefaultOptions added unless config already picks
// "ops_sequential" or "ops_parallel".
func goBackendConfig(config string) string {
	for _, opt := range strings.Split(config, ",") {
		if opt = strings.TrimSpace(opt); opt == "ops_sequential" || opt == "ops_parallel" {
			return config
		}
	}
	if strings.TrimSpace(config) == "" {
		return goBackendDefaultOptions
	}
	return config + "," + goBackendDefaultOptions
}
