package training

import (
	"fmt"
	"strconv"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"
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

// Validate checks s and returns the first *ConfigError: each setting against what its row of
// the table takes (Fields, in table order: the one place that says a setting's values), then
// the settings that go together (the length of the run given once, the schedule's parameters,
// the whitening, the transfer's). It reads nothing (no data, no checkpoint): what depends on
// the training split's size or on a transfer's source is checked when the run resolves them.
func (s *Settings) Validate() error {
	if err := s.validatePresent(); err != nil {
		return err
	}
	for _, f := range fields {
		if err := f.check(s); err != nil {
			return err
		}
	}
	for _, check := range []func() error{s.validateLength, s.validateModel, s.validateSchedule, s.validateTransfer} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// check refuses s's value of the setting when its values do not take it: a *ConfigError of
// the row's Path, the value (a name quoted) and its Range.
func (f *Field) check(s *Settings) error {
	if f.applies != nil && !f.applies(s) {
		return nil
	}
	value := f.get(s)
	switch {
	case f.values.isName() && !f.values.takesName(value):
		return &ConfigError{Field: f.Path, Value: strconv.Quote(value), Reason: "use " + f.Range}
	case f.number != nil && !f.values.takesNumber(f.number(s)):
		return &ConfigError{Field: f.Path, Value: value, Reason: "use " + f.Range}
	}
	return nil
}

// validatePresent refuses settings made in Go without a dataset or an optimizer (the zero
// values of their fields, which no row can say).
func (s *Settings) validatePresent() error {
	if s.Data.Spec.NumClasses <= 0 || s.Data.Spec.Name == "" {
		return &ConfigError{Field: "Data.Spec", Value: "(zero)", Reason: "set it to CIFAR10(), CIFAR100(LabelsFine) or CIFAR100(LabelsCoarse)"}
	}
	if s.Optimizer == nil {
		return &ConfigError{Field: "Optimizer", Value: "nil", Reason: "set an optimizer, e.g. training.DefaultAdam() (Defaults') or training.NewOptimizer(\"sgd\")"}
	}
	return nil
}

// validateModel checks the architecture of a transfer's source (ArchOfSource needs a source),
// and the whitening bias's epochs of a model without a whitening layer.
func (s *Settings) validateModel() error {
	if s.Model.Arch == ArchOfSource && s.Transfer.From == "" {
		return &ConfigError{Field: "Model.Arch", Value: strconv.Quote(s.Model.Arch), Reason: "use " + rangeOf("model") +
			" (" + ArchOfSource + ", the source run's, needs Transfer.From)"}
	}
	if n, ok := s.Optimizer.(optimizers.Nesterov); ok && s.Model.Arch != ArchOfSource { // a source's is checked when resolved
		return checkWhitening(s.Model.Arch, n.WhitenBiasEpochs)
	}
	return nil
}

// validateLength checks the length of the run: Steps or Epochs, once.
func (s *Settings) validateLength() error {
	r := &s.Run
	switch {
	case r.Steps != 0 && r.Epochs != 0:
		return &ConfigError{Field: "Run.Steps/Run.Epochs", Value: fmt.Sprintf("%d/%g", r.Steps, r.Epochs),
			Reason: "set the length of the run once: Steps or Epochs, not both"}
	case r.Steps == 0 && r.Epochs == 0:
		return &ConfigError{Field: "Run.Steps", Value: "0", Reason: "set the number of training steps (Steps > 0) or of epochs (Epochs > 0)"}
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

// validateSchedule checks the schedule's parameters against its kind (the cosine's warm-up against the run's
// steps when they are known: resolve checks it against those of the epochs).
func (s *Settings) validateSchedule() error {
	c := &s.Schedule
	switch c.Name {
	case optimizers.ScheduleConstant:
		if c.WarmupSteps != 0 || c.MinLearningRate != 0 {
			return &ConfigError{Field: "Schedule.Name", Value: c.Name, Reason: "WarmupSteps and MinLearningRate need Schedule \"cosine\""}
		}
	case optimizers.ScheduleTriangle:
		if c.WarmupSteps != 0 || c.MinLearningRate != 0 {
			return &ConfigError{Field: "Schedule.Name", Value: c.Name, Reason: "WarmupSteps and MinLearningRate need Schedule \"cosine\" (the triangle has its own)"}
		}
	case optimizers.ScheduleCosine:
		if c.MinLearningRate >= learningRate(s.Optimizer) {
			return &ConfigError{Field: "Schedule.MinLearningRate", Value: fmt.Sprint(c.MinLearningRate), Reason: fmt.Sprintf("must be below the learning rate (%g)", learningRate(s.Optimizer))}
		}
		return checkWarmup(c.WarmupSteps, s.Run.Steps)
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

// validateTransfer checks the transfer's settings (From, NewHead, Freeze, BackboneLearningRate)
// together and against the head.
func (s *Settings) validateTransfer() error {
	t := &s.Transfer
	if t.From == "" && t.BackboneLearningRate != 0 {
		return &ConfigError{Field: "Transfer.BackboneLearningRate", Value: fmt.Sprint(t.BackboneLearningRate),
			Reason: "it applies to a transferred run: set Transfer.From to the trained run's checkpoint directory"}
	}
	if t.From == "" && t.NewHead {
		return &ConfigError{Field: "Transfer.NewHead", Value: "true", Reason: "it applies to a transferred run: set Transfer.From to the trained run's checkpoint directory"}
	}
	if t.Freeze == FreezeBackbone && t.BackboneLearningRate != 0 {
		return &ConfigError{Field: "Transfer.BackboneLearningRate", Value: fmt.Sprint(t.BackboneLearningRate),
			Reason: "a frozen backbone does not train: leave it 0 with Freeze \"backbone\""}
	}
	if (t.From != "" || t.Freeze != "") && s.Model.Head > 0 && s.Model.Head != s.Data.Spec.NumClasses {
		return &ConfigError{Field: "Model.Head", Value: fmt.Sprint(s.Model.Head), Reason: "a transferred run's head is sized from the dataset: leave Head 0"}
	}
	return nil
}
