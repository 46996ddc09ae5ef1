package interop_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/cifarlib/interop"
)

// ExampleImport imports the state_dict real PyTorch wrote for the cnn's twin as a run, then
// exports the run back for PyTorch.
func ExampleImport() {
	dir, _ := os.MkdirTemp("", "interop-example")
	defer os.RemoveAll(dir)
	run := filepath.Join(dir, "from-pytorch")
	rep, err := interop.Import(filepath.Join("testdata", "cnn_twin.pt"), run, interop.ImportOptions{Arch: "cnn"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep.Arch, rep.Names, rep.Tensors, "tensors")
	res, err := interop.Export(run, filepath.Join(dir, "back.safetensors"), interop.ExportOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Tensors, "tensors;", res.Normalization)
	// Output:
	// cnn cnn-twin 8 tensors
	// 8 tensors; transforms.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.2435, 0.2616))
}
