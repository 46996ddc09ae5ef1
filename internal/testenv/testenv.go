// Package testenv holds the test helpers that need nothing of the lab's library: whether the
// tests run in CI (InCI), the float32 tolerances and comparisons of the numeric tests, the XLA
// CPU plugin or a skip, a backend without bfloat16. Tests of every stage may import it; it
// imports only internal plumbing (see internal/layers). The helpers that need the library's data
// or backends are in cifarlib/internal/labtest.
package testenv

import (
	"os"
	"strings"
)

// InCI reports whether the tests run in CI ($CI set to anything but "", "0" or "false"), where
// the lab's components are installed by kernel/setup.sh: a missing prerequisite then fails the
// test instead of skipping it.
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "0" && v != "false"
}
