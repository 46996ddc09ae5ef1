package backends_test

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
)

// A notebook's lab holds a lazy backend: named, and checked, before anything is created; its
// PJRT client is created by the first computation on it (none here: "go" holds no client).
func ExampleLazy() {
	b, err := backends.Lazy("go")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(backends.Name(b), backends.IsGoBackend(b))
	_, err = backends.Lazy("tpu") // refused at once, as New refuses it
	fmt.Println(err)
	// Output:
	// go (pure Go, CPU) true
	// backend "tpu" unavailable: unknown backend name: use one of "auto", "cpu", "go", "cuda" (or a GoMLX configuration such as "xla:cpu")
}
