//go:build !cifarlab_nogobackend

package backends

import (
	_ "unsafe" // go:linkname

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/gobackend"
)

// newGoBackend creates the pure-Go backend from a configuration (the part after "go:"), adding
// goBackendDefaultOptions unless config names an ops execution mode. requested is the name given
// to New, for its errors.
func newGoBackend(requested, config string) (compute.Backend, error) {
	b, err := gobackend.New(goBackendConfig(config))
	if err != nil {
		return nil, &BackendError{Requested: requested, Missing: "the Go backend rejected its configuration",
			Fix: "use \"go\" without options", Err: err}
	}
	return b, nil
}

// goCapabilities is compute's pure-Go backend's capabilities (what its Backend.Capabilities
// returns), to turn PreferConstantsForVariables off in init.
//
// Why: compute v0.1.13+ sets it for the pure-Go backend, and GoMLX v0.28.16 then compiles the
// value of every variable that has one into each graph that is not a training step (model
// Variable.paramNode: `!IsTraining(g) && HasValue()`), trainable weights included, instead of
// feeding it as a parameter. GoMLX keeps a compiled graph per input shape, so such a program
// goes on computing with the values it was compiled with after they change: an Evaluator
// reused during or after training, the lab's warm programs (one compile per shape, any
// checkpoint), and the graphs that apply an update outside a training step would all compute
// with stale weights (TestNesterovMatchesTorchSGD and TestLookaheadMatchesAirbench, which run
// the optimizers' update graphs that way, caught it). XLA's
// backends do not set it. With it off, variables are parameters on every backend, as with
// GoMLX v0.28.8 and compute v0.1.6. Neither offers a switch: a Store's WithVariableAsConst
// only turns embedding on, and the capability is the package variable of compute's internal
// gobackend package, which this reaches by its linker name (a wrapper backend would not do:
// tensors remember the backend of the buffers it returns, and refuse to be fed to another).
// TestGoBackendFeedsVariables fails if it no longer takes effect, and the build fails if the
// variable is renamed.
//
//go:linkname goCapabilities github.com/gomlx/compute/internal/gobackend.Capabilities
var goCapabilities compute.Capabilities

func init() { goCapabilities.PreferConstantsForVariables = false }
