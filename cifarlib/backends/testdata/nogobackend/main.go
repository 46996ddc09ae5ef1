// Command nogobackend is run by TestNoGoBackendTag, built with -tags cifarlab_nogobackend: it
// prints what backends.New says for the pure-Go backend in such a program.
package main

import (
	"errors"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
)

func main() {
	for _, name := range []string{"go", "go:ops_parallel"} {
		_, err := backends.New(name)
		var be *backends.BackendError
		fmt.Printf("%s: BackendError %v: %v\n", name, errors.As(err, &be), err)
	}
}
