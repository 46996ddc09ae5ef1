//go:build !cifarlab_nogobackend

package backends

import (
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
