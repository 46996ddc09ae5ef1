package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// configFlags are the flags of `cifarlab train` that set each training.Config field a
// *training.ConfigError can name.
var configFlags = map[string]string{
	"Steps": "--steps", "BatchSize": "--batch", "Head": "--head", "Optimizer": "--optimizer", "LearningRate": "--lr",
	"MinLearningRate": "--min-lr", "WeightDecay": "--weight-decay", "Schedule": "--schedule", "WarmupSteps": "--warmup",
	"Precision": "--precision", "BackboneLearningRate": "--backbone-lr", "Freeze": "--freeze", "From": "--from",
	"NewHead": "--new-head", "Recipe": "--recipe", "Epochs": "--epochs", "Steps/Epochs": "--steps/--epochs", "Momentum": "--momentum",
	"BiasScaler": "--bias-scaler", "WhitenBiasEpochs": "--whiten-bias-epochs", "LabelSmoothing": "--label-smoothing", "TTA": "--tta",
	"Augmentation": "--augmentation", "Momentum/BiasScaler/WhitenBiasEpochs": "--momentum/--bias-scaler/--whiten-bias-epochs",
	"Lookahead": "--lookahead", "Augment": "--augment",
}

// inFlags says err in a CLI user's words: the library's errors tell a Go caller what to change
// (a Config field, a factory); on the command line the same fix is a flag. Errors it does not
// know are returned as they are; errors.Is and errors.As see through the rewrite.
func inFlags(err error) error {
	var hm *cifarlib.HeadMismatchError
	if errors.As(err, &hm) && hm.Overridden {
		return &flagWords{err: err, msg: fmt.Sprintf("model head has %d outputs but dataset %s has %d classes (--head %d): "+
			"drop --head, so that the head is sized from --dataset (%d outputs)", hm.HeadWidth, hm.Dataset, hm.NumClasses,
			hm.HeadWidth, hm.NumClasses)}
	}
	var bd *backends.BatchDivisibilityError
	if errors.As(err, &bd) {
		if flag, ok := configFlags[bd.Field]; ok {
			return &flagWords{err: err, msg: strings.Replace(strings.TrimPrefix(bd.Error(), "backends: training config: "),
				fmt.Sprintf("%s=%d", bd.Field, bd.BatchSize), fmt.Sprintf("%s %d", flag, bd.BatchSize), 1)}
		}
	}
	// The transfer errors (*training.ShapeMismatchError, *training.ArchMismatchError) say their
	// whole message in flags themselves.
	var words interface{ InFlags() string }
	if errors.As(err, &words) {
		return &flagWords{err: err, msg: words.InFlags()}
	}
	var ce *training.ConfigError
	if errors.As(err, &ce) {
		if flag, ok := configFlags[ce.Field]; ok {
			return &flagWords{err: err, msg: fmt.Sprintf("%s %s: %s", flag, strings.Trim(ce.Value, `"`), ce.Reason)}
		}
	}
	return err
}

// flagWords is an error with a CLI user's message.
type flagWords struct {
	err error
	msg string
}

func (e *flagWords) Error() string { return e.msg }
func (e *flagWords) Unwrap() error { return e.err }
