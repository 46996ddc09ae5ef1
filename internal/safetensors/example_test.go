package safetensors_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/internal/safetensors"
)

// Example writes two tensors with PyTorch's metadata and reads them back.
func Example() {
	dir, _ := os.MkdirTemp("", "safetensors-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.safetensors")
	err := safetensors.WriteFile(path, []safetensors.Tensor{
		{Name: "linear.bias", DType: "F32", Shape: []int{2}, Data: make([]byte, 8)},
		{Name: "bn.num_batches_tracked", DType: "I64", Shape: []int{}, Data: make([]byte, 8)},
	}, map[string]string{"format": "pt"})
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := safetensors.ReadFile(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range f.Tensors {
		fmt.Println(t.Name, t.DType, t.Shape)
	}
	fmt.Println(f.Metadata["format"])
	// Output:
	// linear.bias F32 [2]
	// bn.num_batches_tracked I64 []
	// pt
}
