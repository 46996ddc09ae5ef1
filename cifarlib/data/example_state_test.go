package data_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// What a data folder holds, decided once for the notebooks, training and doctor: here a copied
// folder of real-layout files with no record of a verified download, which is used as real data
// and said to be unverified: being a subset (10 training images), it says so, since no official
// checksum covers it; its splits are loaded from there.
func ExampleStateOf() {
	root, _ := os.MkdirTemp("", "cifarlab-example-")
	defer os.RemoveAll(root)
	fmt.Println(data.StateOf(root, data.CIFAR10()).Kind)

	// Files in the binary layout, marked by nothing (written by Synthesize, its marker removed).
	_ = data.Synthesize(root, data.CIFAR10(), data.SynthOptions{TrainSize: 10, TestSize: 5})
	_ = os.Remove(filepath.Join(root, "cifar-10-batches-bin", data.SyntheticMarker))
	st := data.StateOf(root, data.CIFAR10())
	fmt.Println(st.Kind, st.LoadRoot == root)
	fmt.Println(strings.ReplaceAll(st.String(), root, "DIR"))

	// Load from what it found, without looking at the folder again.
	train, _ := st.LoadSplit(data.SplitTrain)
	fmt.Println(st.Provenance(train, nil).Kind, train.Len())
	// Output:
	// none
	// real, unverified true
	// cifar10: real, unverified (binary layout, in DIR/cifar-10-batches-bin): a subset or a conversion, not the official files (10 training and 5 test images; the official files hold 50000 and 10000), so no official checksum covers it and `cifarlab verify` can only confirm that; it is used as real data
	// real, unverified 10
}
