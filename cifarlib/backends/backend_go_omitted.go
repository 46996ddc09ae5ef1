//go:build cifarlab_nogobackend

package backends

import (
	"github.com/gomlx/compute"
)

// newGoBackend, in a program built with NoGoBackendTag, says that the pure-Go backend is not
// linked into it and how to get it.
func newGoBackend(requested, _ string) (compute.Backend, error) {
	return nil, &BackendError{Requested: requested, Missing: "the pure-Go backend is not linked into this program " +
		"(built with -tags " + NoGoBackendTag + ", as the XLA notebook kernels build cells so that they link faster)",
		Fix: "use the XLA backend the kernel sets in GOMLX_BACKEND, or link the pure-Go backend back " +
			"into the cells with the cell line `%goflags -tags=`"}
}
