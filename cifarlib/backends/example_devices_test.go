package backends_test

import (
	"errors"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
)

// Data parallelism asks the backend for devices: XLA's CPU plugin makes as many CPU devices as
// asked (NewWithDevices("cpu", 4)), the GPUs are what they are, and the pure-Go backend
// has one, so asking it for two is a typed error. A global batch must split evenly, and ShardOf
// says on which device a position of the global batch (as the guards report it) was.
func ExampleNewWithDevices() {
	_, err := backends.NewWithDevices(backends.Go, 2)
	var unsupported *backends.DevicesUnsupportedError
	fmt.Println(errors.As(err, &unsupported), errors.Is(err, backends.ErrDevices))

	fmt.Println(backends.CheckBatchDivisible("BatchSize", 30, 4))

	device, local := cifarlib.ShardOf(13, 16, 4)
	fmt.Printf("position 13 of a batch of 16 on 4 devices: device %d, its example %d\n", device, local)
	// Output:
	// true true
	// backends: training config: BatchSize=30 does not split across 4 devices (30 is not a multiple of 4): use 28 or 32, or another number of devices
	// position 13 of a batch of 16 on 4 devices: device 3, its example 1
}
