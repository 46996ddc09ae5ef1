package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"
	"github.com/stretchr/testify/require"
)

// TestInFlags: the library's Go-worded fixes become flags; what it does not know, or what names
// no flag, is left as it is; errors.As still finds the library's error.
func TestInFlags(t *testing.T) {
	head := &cifarlib.HeadMismatchError{Dataset: "cifar100", HeadWidth: 10, NumClasses: 100, Overridden: true}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"--head", fmt.Errorf("training: %w", head),
			"model head has 10 outputs but dataset cifar100 has 100 classes (--head 10): drop --head, so that the head is sized from --dataset (100 outputs)"},
		{"head not overridden", &cifarlib.HeadMismatchError{Dataset: "cifar100", HeadWidth: 10, NumClasses: 100},
			"model head has 10 outputs but dataset cifar100 has 100 classes: build the model with cifarlib's factory for cifar100, or set the head to 100"},
		{"config field", &training.ConfigError{Field: "Run.Steps", Value: "0", Reason: "set the number of training steps (> 0)"},
			"--steps 0: set the number of training steps (> 0)"},
		{"quoted value", &training.ConfigError{Field: "Schedule.Name", Value: `"step"`, Reason: `use "constant" or "cosine"`},
			`--schedule step: use "constant" or "cosine"`},
		{"fields checked together", &training.ConfigError{Field: "Run.Steps/Run.Epochs", Value: "3/1", Reason: "give the length of the run once"},
			"--steps 3 and --epochs 1: give the length of the run once"},
		{"malformed value", &training.ValueError{Field: "lr", Value: "fast", Range: "a number >= 0"}, `--lr "fast": use a number >= 0`},
		{"field without a flag", &training.ConfigError{Field: "Record.Params", Value: "(zero)", Reason: "set it"},
			"training: config: Record.Params=(zero): set it"},
		{"batch across devices", &backends.BatchDivisibilityError{Field: "Data.BatchSize", BatchSize: 10, Devices: 4, Below: 8, Above: 12},
			"--batch 10 does not split across 4 devices (10 is not a multiple of 4): use 8 or 12, or another number of devices"},
		{"transfer into another architecture", fmt.Errorf("train: %w", &training.ArchMismatchError{Dir: "runs/c10", Saved: "cnn", Requested: "resnet20"}),
			"training: run runs/c10 is a cnn, but the model asked for is a resnet20: the backbone can only be carried into the same " +
				"architecture; use --model cnn, or leave --model out with --from"},
		{"resume into another head", &checkpoints.ShapeMismatchError{Dir: "runs/c10", Variable: "/cnn/head/dense/weights", Saved: []int{1024, 10},
			Model: []int{1024, 20}, SavedDataset: "cifar10", ModelDataset: "cifar100-coarse", SavedHead: 10, ModelHead: 20, Resume: true},
			"checkpoints: resuming runs/c10: size mismatch for /cnn/head/dense/weights: copying a variable with shape [1024 10] from " +
				"checkpoint (trained for cifar10, head of 10), the shape in the current model is [1024 20] (built for cifar100-coarse, " +
				"head of 20); a saved variable is never reshaped: transfer the run instead, which carries the backbone and initialises " +
				"a new head of 20 (cifarlab train --from runs/c10 --dataset cifar100 --labels coarse, with a new --checkpoint directory)"},
		{"other", errors.New("disk full"), "disk full"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := inFlags(c.err)
			require.EqualError(t, got, c.want)
			require.ErrorIs(t, got, c.err)
		})
	}
	var hm *cifarlib.HeadMismatchError
	require.ErrorAs(t, inFlags(head), &hm)
}
