package data_test

import (
	"errors"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// Reading one of torchvision's CIFAR pickles (here a two-image file Python wrote in the
// official files' format). LoadSplit reads whole folders of them: point it at the folder
// holding cifar-10-batches-py/ or cifar-100-python/.
func ExampleReadPickleFile() {
	recs, err := data.ReadPickleFile("testdata/pickles/cifar100_p2.pkl", data.CIFAR100(data.LabelsFine))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(recs.Len(), "images; fine labels", recs.Labels(), "coarse labels", recs.CoarseLabel(0), recs.CoarseLabel(1))

	// A pickle that would run a shell command in Python is refused; nothing is executed.
	_, err = data.ReadPickleFile("testdata/pickles/evil_posix_system_p2.pkl", data.CIFAR10())
	fmt.Println(errors.Is(err, data.ErrUnsafePickle))
	fmt.Println(err)
	// Output:
	// 2 images; fine labels [3 10] coarse labels 0 1
	// true
	// data: testdata/pickles/evil_posix_system_p2.pkl: at byte offset 2: value posix.system: global not allowed: a CIFAR pickle names only numpy.core.multiarray._reconstruct (or numpy._core.multiarray._reconstruct), numpy.ndarray and numpy.dtype; nothing of this file was executed
}
