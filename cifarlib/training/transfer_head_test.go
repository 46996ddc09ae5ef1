package training

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
)

// A transfer onto a dataset with the source's number of classes carries the trained head bit
// for bit with the backbone (fine-tuning a model on its own task); NewHead initialises it
// afresh from the seed, as a transfer to another width always does.
func TestTransferSameWidthKeepsHead(t *testing.T) {
	from, src := transferSource(t, cifarlib.ArchCNN)
	all := loadAll(t, src)
	train, test := labtest.TrainTestRecords(t, data.CIFAR10(), 16, 4, 13)
	cfg := with(t, Defaults(), map[string]string{"model": ArchOfSource, "from": from, "steps": "1", "batch": "8", "seed": "5", "no-eval": "true"})
	env := Env{Train: train, Test: test, Backend: labtest.Backend(t), Progress: ProgressOff}
	for _, newHead := range []bool{false, true} {
		cfg.Transfer.NewHead = newHead
		tr, err := NewTrainer(cfg, env)
		require.NoError(t, err)
		got := trainVars(t, tr.Store())
		r := tr.Transfer()
		for _, path := range []string{"/cnn/head/dense/weights", "/cnn/head/dense/biases"} {
			if newHead {
				require.NotContains(t, got, path, "NewHead leaves the head to the initializer")
				continue
			}
			require.NotEmpty(t, all[path])
			require.Equal(t, all[path], got[path], "%s must be the source's, bit for bit", path)
		}
		require.Equal(t, all["/cnn/conv1/conv/weights"], got["/cnn/conv1/conv/weights"])
		if newHead {
			require.Empty(t, r.KeptHead)
			require.Len(t, r.Reinitialized, 2)
			require.Contains(t, r.String(), "  re-initialised from the seed: /cnn/head/dense/biases [10] (was [10])")
			continue
		}
		require.Empty(t, r.Reinitialized)
		require.Equal(t, []TransferVariable{{Path: "/cnn/head/dense/biases", Shape: []int{10}},
			{Path: "/cnn/head/dense/weights", Shape: []int{1024, 10}}}, r.KeptHead)
		require.Contains(t, r.String(), "  head kept, carried bit for bit: /cnn/head/dense/biases [10], /cnn/head/dense/weights [1024 10]: "+
			"cifar10 has the source's 10 classes (NewHead, the setting new-head, re-initialises it from the seed)\n")
		require.False(t, strings.Contains(r.String(), "re-initialised"))
	}
}
