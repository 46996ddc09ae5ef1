package training

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// ConfigError reports an invalid setting: which Settings field, its value and how to fix it.
type ConfigError struct {
	// Field is the Settings field's path, e.g. "Data.BatchSize" (Field.Path of its row in
	// Fields); settings checked together are joined by "/".
	Field string
	// Value is the offending value, formatted.
	Value string
	// Reason says what is wrong and what to use instead.
	Reason string
}

// Error implements error: "training: config: FIELD=VALUE: REASON".
func (e *ConfigError) Error() string {
	return fmt.Sprintf("training: config: %s=%s: %s", e.Field, e.Value, e.Reason)
}

// Validate checks s field by field, in the order of its parts, and returns the first
// *ConfigError. It reads nothing (no data, no checkpoint): what depends on the training split's
// size or on a transfer's source is checked when the run resolves them.
func (s *Settings) Validate() error {
	for _, check := range []func() error{s.validateModel, s.validateLength, s.validateOptimizer, s.validateSchedule,
		s.validateRecipeParts, s.validatePeriods, s.validateTransfer} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateModel checks the recipe's name, the dataset, the model, the compute and the batch.
func (s *Settings) validateModel() error {
	if _, err := Recipe(s.Recipe); err != nil {
		return err
	}
	if s.Data.Spec.NumClasses <= 0 || s.Data.Spec.Name == "" {
		return &ConfigError{Field: "Data.Spec", Value: "(zero)", Reason: "set it to CIFAR10(), CIFAR100(LabelsFine) or CIFAR100(LabelsCoarse)"}
	}
	archs := append(cifarlib.Architectures(), ArchOfSource)
	if !slices.Contains(archs, s.Model.Arch) || s.Model.Arch == ArchOfSource && s.Transfer.From == "" {
		return &ConfigError{Field: "Model.Arch", Value: fmt.Sprintf("%q", s.Model.Arch), Reason: "use one of " + strings.Join(cifarlib.Architectures(), ", ") +
			" (or " + ArchOfSource + ", the source run's, with Transfer.From)"}
	}
	if s.Model.Head < 0 {
		return &ConfigError{Field: "Model.Head", Value: fmt.Sprint(s.Model.Head), Reason: "use 0 to size the head from the dataset, or a positive width"}
	}
	if p, err := cifarlib.ParsePrecision(string(s.Compute.Precision)); err != nil || p != s.Compute.Precision {
		return &ConfigError{Field: "Compute.Precision", Value: fmt.Sprintf("%q", s.Compute.Precision), Reason: "use " + strings.Join(cifarlib.Precisions(), " or ")}
	}
	if s.Compute.Devices < 1 && s.Compute.Devices != backends.DevicesAll {
		return &ConfigError{Field: "Compute.Devices", Value: fmt.Sprint(s.Compute.Devices), Reason: "use a positive number of devices or DevicesAll"}
	}
	if s.Data.BatchSize <= 0 {
		return &ConfigError{Field: "Data.BatchSize", Value: fmt.Sprint(s.Data.BatchSize), Reason: "use a positive batch size, e.g. 32 or 128"}
	}
	return nil
}

// validateLength checks the length of the run: Steps or Epochs.
func (s *Settings) validateLength() error {
	r := &s.Run
	switch {
	case r.Steps != 0 && r.Epochs != 0:
		return &ConfigError{Field: "Run.Steps/Run.Epochs", Value: fmt.Sprintf("%d/%g", r.Steps, r.Epochs),
			Reason: "set the length of the run once: Steps or Epochs, not both"}
	case r.Steps < 0: // only the one given is named
		return &ConfigError{Field: "Run.Steps", Value: fmt.Sprint(r.Steps), Reason: "the length of the run must be positive, e.g. 1000 steps"}
	case r.Epochs < 0 || math.IsNaN(r.Epochs) || math.IsInf(r.Epochs, 0):
		return &ConfigError{Field: "Run.Epochs", Value: fmt.Sprint(r.Epochs), Reason: "the length of the run must be positive, e.g. 2 epochs"}
	case r.Steps == 0 && r.Epochs == 0:
		return &ConfigError{Field: "Run.Steps", Value: "0", Reason: "set the number of training steps (Steps > 0) or of epochs (Epochs > 0)"}
	}
	return nil
}

// validateOptimizer checks the optimizer's settings.
func (s *Settings) validateOptimizer() error {
	if s.Optimizer == nil {
		return &ConfigError{Field: "Optimizer", Value: "nil", Reason: "set an optimizer, e.g. training.DefaultAdam() (Defaults') or training.NewOptimizer(\"sgd\")"}
	}
	wd, _ := optimizerParam(s.Optimizer, "WeightDecay")
	if learningRate(s.Optimizer) < 0 || s.Schedule.MinLearningRate < 0 || wd < 0 {
		return &ConfigError{Field: "Optimizer.LearningRate", Value: fmt.Sprintf("%g (min %g, weight decay %g)", learningRate(s.Optimizer), s.Schedule.MinLearningRate, wd),
			Reason: "learning rates and weight decay must not be negative"}
	}
	n, ok := s.Optimizer.(Nesterov)
	switch {
	case !ok:
		return nil
	case n.WhitenBiasEpochs < 0:
		return &ConfigError{Field: "Optimizer.WhitenBiasEpochs", Value: fmt.Sprint(n.WhitenBiasEpochs), Reason: "must not be negative (0: the whitening bias trains throughout)"}
	case n.Momentum < 0 || n.Momentum >= 1 || math.IsNaN(n.Momentum):
		return &ConfigError{Field: "Optimizer.Momentum", Value: fmt.Sprint(n.Momentum), Reason: "use a momentum in [0, 1), e.g. 0.85 (airbench94's)"}
	case n.BiasScaler < 0:
		return &ConfigError{Field: "Optimizer.BiasScaler", Value: fmt.Sprint(n.BiasScaler), Reason: "must not be negative (airbench94's is 64)"}
	case s.Model.Arch != ArchOfSource: // a source's is checked when resolved
		return checkWhitening(s.Model.Arch, n.WhitenBiasEpochs)
	}
	return nil
}

// checkWhitening refuses a whitening bias's epochs for a model without a whitening layer.
func checkWhitening(arch string, whitenBiasEpochs int) error {
	if whitenBiasEpochs > 0 && arch != cifarlib.ArchAirbench94 {
		return &ConfigError{Field: "Optimizer.WhitenBiasEpochs", Value: fmt.Sprint(whitenBiasEpochs),
			Reason: fmt.Sprintf("model %q has no whitening layer: leave it 0 (it is for model %q)", arch, cifarlib.ArchAirbench94)}
	}
	return nil
}

// validateSchedule checks the learning-rate schedule (the cosine's warm-up against the run's
// steps when they are known: resolve checks it against those of the epochs).
func (s *Settings) validateSchedule() error {
	c := &s.Schedule
	switch c.Name {
	case ScheduleConstant:
		if c.WarmupSteps != 0 || c.MinLearningRate != 0 {
			return &ConfigError{Field: "Schedule.Name", Value: c.Name, Reason: "WarmupSteps and MinLearningRate need Schedule \"cosine\""}
		}
	case ScheduleTriangle:
		if c.WarmupSteps != 0 || c.MinLearningRate != 0 {
			return &ConfigError{Field: "Schedule.Name", Value: c.Name, Reason: "WarmupSteps and MinLearningRate need Schedule \"cosine\" (the triangle has its own)"}
		}
	case ScheduleCosine:
		if c.MinLearningRate >= learningRate(s.Optimizer) {
			return &ConfigError{Field: "Schedule.MinLearningRate", Value: fmt.Sprint(c.MinLearningRate), Reason: fmt.Sprintf("must be below the learning rate (%g)", learningRate(s.Optimizer))}
		}
		return checkWarmup(c.WarmupSteps, s.Run.Steps)
	default:
		return &ConfigError{Field: "Schedule.Name", Value: fmt.Sprintf("%q", c.Name), Reason: "use \"constant\", \"cosine\" or \"triangle\""}
	}
	return nil
}

// checkWarmup checks the cosine's warm-up against the run's steps (0: not known yet).
func checkWarmup(warmup, steps int) error {
	if warmup < 0 || steps > 0 && warmup >= steps {
		return &ConfigError{Field: "Schedule.WarmupSteps", Value: fmt.Sprint(warmup), Reason: fmt.Sprintf("use 0 <= WarmupSteps < Steps (%d)", steps)}
	}
	return nil
}

// validateRecipeParts checks the parts of a recipe that any model and optimizer can use: the
// augmentation scheme, label smoothing and the test-time augmentation of the final evaluation.
func (s *Settings) validateRecipeParts() error {
	if a, err := data.ParseAugmentation(string(s.Data.Augmentation)); err != nil || a != s.Data.Augmentation {
		reason := "use " + strings.Join(augmentationNames(), " or ")
		if err != nil {
			reason = strings.TrimPrefix(err.Error(), "data: ")
		}
		return &ConfigError{Field: "Data.Augmentation", Value: fmt.Sprintf("%q", s.Data.Augmentation), Reason: reason}
	}
	if l := s.Run.LabelSmoothing; l < 0 || l >= 1 || math.IsNaN(l) {
		return &ConfigError{Field: "Run.LabelSmoothing", Value: fmt.Sprint(l), Reason: "use a value in [0, 1): 0 is none, airbench94 uses 0.2"}
	}
	if s.Eval.TTA < TTANone || s.Eval.TTA > TTAMirrorTranslate {
		return &ConfigError{Field: "Eval.TTA", Value: fmt.Sprint(s.Eval.TTA), Reason: "use 0 (none), 1 (mirror) or 2 (mirror and translate)"}
	}
	return nil
}

// validatePeriods checks the periods of validation, checkpoints, History points and log lines,
// and the counts.
func (s *Settings) validatePeriods() error {
	e := &s.Eval
	switch {
	case e.Every < EvalOff:
		return &ConfigError{Field: "Eval.Every", Value: fmt.Sprint(e.Every), Reason: "use a period > 0, EvalAuto (0) or EvalOff (-1)"}
	case e.BatchSize <= 0:
		return &ConfigError{Field: "Eval.BatchSize", Value: fmt.Sprint(e.BatchSize), Reason: "use a positive batch size, e.g. 100"}
	case s.Checkpoint.Keep <= 0:
		return &ConfigError{Field: "Checkpoint.Keep", Value: fmt.Sprint(s.Checkpoint.Keep), Reason: "keep at least 1 checkpoint"}
	case s.Checkpoint.Every < 0 || e.Examples < 0 || s.Record.HistoryEvery < 0 || s.Record.LogEvery < 0:
		return &ConfigError{Field: "Checkpoint.Every/Eval.Examples/Record.HistoryEvery/Record.LogEvery",
			Value: "negative", Reason: "periods and counts must be >= 0"}
	}
	return nil
}

// validateTransfer checks the transfer's settings (From, NewHead, Freeze, BackboneLearningRate)
// against the rest: the head and the learning rates.
func (s *Settings) validateTransfer() error {
	t := &s.Transfer
	if t.From == "" && t.BackboneLearningRate != 0 {
		return &ConfigError{Field: "Transfer.BackboneLearningRate", Value: fmt.Sprint(t.BackboneLearningRate),
			Reason: "it applies to a transferred run: set Transfer.From to the trained run's checkpoint directory"}
	}
	if t.From == "" && t.NewHead {
		return &ConfigError{Field: "Transfer.NewHead", Value: "true", Reason: "it applies to a transferred run: set Transfer.From to the trained run's checkpoint directory"}
	}
	switch t.Freeze {
	case "":
	case FreezeBackbone:
		if t.BackboneLearningRate != 0 {
			return &ConfigError{Field: "Transfer.BackboneLearningRate", Value: fmt.Sprint(t.BackboneLearningRate),
				Reason: "a frozen backbone does not train: leave it 0 with Freeze \"backbone\""}
		}
	default:
		return &ConfigError{Field: "Transfer.Freeze", Value: fmt.Sprintf("%q", t.Freeze), Reason: "use \"\" (fine-tune everything) or \"backbone\" (linear probe)"}
	}
	if t.BackboneLearningRate < 0 {
		return &ConfigError{Field: "Transfer.BackboneLearningRate", Value: fmt.Sprint(t.BackboneLearningRate), Reason: "must not be negative (0: the same as the learning rate)"}
	}
	if (t.From != "" || t.Freeze != "") && s.Model.Head > 0 && s.Model.Head != s.Data.Spec.NumClasses {
		return &ConfigError{Field: "Model.Head", Value: fmt.Sprint(s.Model.Head), Reason: "a transferred run's head is sized from the dataset: leave Head 0"}
	}
	return nil
}
