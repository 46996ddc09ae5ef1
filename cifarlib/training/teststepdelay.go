//go:build cifarlab_teststepdelay

package training

import (
	"os"
	"time"
)

// TestStepDelayEnv, in a program built with -tags cifarlab_teststepdelay (and only there), makes
// every training step take that much longer (a Go duration): a step longer than GoNB's 5 s
// between an interrupt and the kill, for the kernel's interrupt test, without a model that slow.
const TestStepDelayEnv = "CIFARLAB_TEST_STEP_DELAY"

func init() {
	if d, err := time.ParseDuration(os.Getenv(TestStepDelayEnv)); err == nil && d > 0 {
		testStepDelay = d
	}
}
