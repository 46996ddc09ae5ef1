package torchfile_test

import (
	"fmt"
	"path/filepath"

	"github.com/cifarlab/cifarlab/internal/torchfile"
)

// ExampleReadFile reads a checkpoint written by torch.save({'net': bn.state_dict(), 'acc': 93.5,
// 'epoch': 3}, FILE) and lists its tensors; nothing in the file is executed.
func ExampleReadFile() {
	f, err := torchfile.ReadFile(filepath.Join("testdata", "checkpoint.pt"))
	if err != nil {
		fmt.Println(err)
		return
	}
	root := f.Root.(*torchfile.Dict)
	acc, _ := root.Get("acc")
	fmt.Println("acc:", acc)
	net, _ := root.Get("net")
	sd := net.(*torchfile.Dict)
	for i, k := range sd.Keys {
		fmt.Println(k, sd.Values[i].(*torchfile.Tensor))
	}
	_, err = torchfile.ReadFile(filepath.Join("testdata", "evil_os_system.pt"))
	fmt.Println(err != nil)
	// Output:
	// acc: 93.5
	// weight float32[2]
	// bias float32[2]
	// running_mean float32[2]
	// running_var float32[2]
	// num_batches_tracked int64[]
	// true
}
