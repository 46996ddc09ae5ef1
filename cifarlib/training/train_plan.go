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

// plan is a training run as its Config resolves: every field validated, every default filled in
// (train_defaults.go), and the settings of a transfer source (Config.From) read from the source
// run. resolve makes it, in this one place; nothing changes it afterwards, and the parts of a
// Trainer read it. The caller's Config is never written: the plan holds a copy.
type plan struct {
	// Config is the caller's Config with its defaults filled in.
	Config
	// source is the run transferred from (Config.From); nil without From.
	source *sourceRun
	// dataset is Spec.ID().
	dataset string
	// stepsPerEpoch is len(train)/BatchSize, when the plan needs it (Epochs, WhitenBiasEpochs);
	// else 0. examples tells resolve len(train) (see trainSize).
	stepsPerEpoch int
	examples      trainSize
}

// trainSize returns the number of training examples of c (its Spec and DataDir resolved):
// resolve calls it once, and only when the plan depends on it (Epochs, WhitenBiasEpochs).
type trainSize func(c *Config) (int, error)

// resolve validates cfg and fills in its defaults, or returns the first *ConfigError (or the
// transfer source's error), in the order of Config's fields. examples gives the training
// split's size when the plan needs it; nil: cfg.TrainRecords' size, if given.
func resolve(cfg Config, examples trainSize) (*plan, error) {
	p := &plan{Config: cfg, examples: examples}
	var err error
	if p.source, err = readTransferSource(&cfg); err != nil {
		return nil, err
	}
	if err := p.resolveSettings(); err != nil {
		return nil, err
	}
	return p, nil
}

// resolveSettings validates and defaults p's Config field by field, in the order of Config's
// fields, its transfer source (if any) read.
func (p *plan) resolveSettings() error {
	if err := applyRecipe(&p.Config); err != nil {
		return err
	}
	for _, step := range []func() error{p.resolveModel, p.resolveOptimizer, p.resolveSchedule, p.resolveRecipeParts, p.resolvePeriods, p.resolveTransfer} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// resolveModel resolves the dataset, the model, the backend's name, the precision, the steps
// and the batch size. A Model left empty is the transfer source's, else DefaultModel.
func (p *plan) resolveModel() error {
	c := &p.Config
	if c.Spec.NumClasses <= 0 || c.Spec.Name == "" {
		return &ConfigError{Field: "Spec", Value: "(zero)", Reason: "set it to CIFAR10(), CIFAR100(LabelsFine) or CIFAR100(LabelsCoarse)"}
	}
	p.dataset = c.Spec.ID()
	if c.DataDir == "" {
		c.DataDir = data.DefaultDir()
	}
	model := DefaultModel
	if p.source != nil {
		model = p.source.info.Model
	}
	c.Model = nameOr(c.Model, model)
	if c.Head < 0 {
		return &ConfigError{Field: "Head", Value: fmt.Sprint(c.Head), Reason: "use 0 to size the head from the dataset, or a positive width"}
	}
	if c.BackendName == "" {
		c.BackendName = backends.Auto
	}
	precision, err := cifarlib.ParsePrecision(string(c.Precision))
	if err != nil {
		return &ConfigError{Field: "Precision", Value: fmt.Sprintf("%q", c.Precision), Reason: "use " + strings.Join(cifarlib.Precisions(), " or ")}
	}
	c.Precision = precision
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.BatchSize < 0 {
		return &ConfigError{Field: "BatchSize", Value: fmt.Sprint(c.BatchSize), Reason: "use a positive batch size, e.g. 32 or 128"}
	}
	return p.resolveSteps()
}

// resolveSteps resolves Steps, from Epochs when it is given instead (and the steps per epoch
// when the plan needs them).
func (p *plan) resolveSteps() error {
	c := &p.Config
	switch {
	case c.Steps != 0 && c.Epochs != 0:
		return &ConfigError{Field: "Steps/Epochs", Value: fmt.Sprintf("%d/%g", c.Steps, c.Epochs),
			Reason: "set the length of the run once: Steps or Epochs, not both"}
	case c.Steps < 0 || c.Epochs < 0 || math.IsNaN(c.Epochs) || math.IsInf(c.Epochs, 0):
		return &ConfigError{Field: "Steps/Epochs", Value: fmt.Sprintf("%d/%g", c.Steps, c.Epochs), Reason: "must be positive"}
	case c.Steps == 0 && c.Epochs == 0:
		return &ConfigError{Field: "Steps", Value: "0", Reason: "set the number of training steps (Steps > 0) or of epochs (Epochs > 0)"}
	}
	if c.WhitenBiasEpochs < 0 {
		return &ConfigError{Field: "WhitenBiasEpochs", Value: fmt.Sprint(c.WhitenBiasEpochs), Reason: "must not be negative (0: the whitening bias trains throughout)"}
	}
	if c.Epochs == 0 && c.WhitenBiasEpochs == 0 {
		return nil
	}
	n, err := p.trainExamples()
	if err != nil {
		return err
	}
	if p.stepsPerEpoch = n / c.BatchSize; p.stepsPerEpoch == 0 {
		return &ConfigError{Field: "BatchSize", Value: fmt.Sprint(c.BatchSize),
			Reason: fmt.Sprintf("an epoch of the %d training examples has no full batch: use a batch size of at most %d", n, n)}
	}
	if c.Epochs > 0 {
		c.Steps = int(math.Ceil(c.Epochs * float64(p.stepsPerEpoch)))
	}
	return nil
}

// trainExamples is the size of the training split, from p.examples, else from TrainRecords.
func (p *plan) trainExamples() (int, error) {
	switch {
	case p.examples != nil:
		return p.examples(&p.Config)
	case p.TrainRecords != nil:
		return p.TrainRecords.Len(), nil
	}
	return 0, &ConfigError{Field: "Epochs", Value: fmt.Sprint(p.Epochs), Reason: "the training split's size is not known here: set Steps"}
}

// resolveOptimizer resolves the optimizer, its learning rate and its weight decay.
func (p *plan) resolveOptimizer() error {
	c := &p.Config
	c.Optimizer = nameOr(c.Optimizer, DefaultOptimizer)
	if !slices.Contains(trainOptimizers, c.Optimizer) {
		return &ConfigError{Field: "Optimizer", Value: fmt.Sprintf("%q", c.Optimizer), Reason: "use one of " + strings.Join(trainOptimizers, ", ")}
	}
	if c.LearningRate < 0 || c.MinLearningRate < 0 || c.WeightDecay < 0 {
		return &ConfigError{Field: "LearningRate", Value: fmt.Sprintf("%g (min %g, weight decay %g)", c.LearningRate, c.MinLearningRate, c.WeightDecay),
			Reason: "learning rates and weight decay must not be negative"}
	}
	if c.Optimizer == OptimizerNesterov {
		return p.resolveNesterov()
	}
	if c.Momentum != 0 || c.BiasScaler != 0 || c.WhitenBiasEpochs != 0 {
		return &ConfigError{Field: "Momentum/BiasScaler/WhitenBiasEpochs", Value: fmt.Sprintf("%g/%g/%d", c.Momentum, c.BiasScaler, c.WhitenBiasEpochs),
			Reason: fmt.Sprintf("these are settings of Optimizer %q: leave them 0 with %q", OptimizerNesterov, c.Optimizer)}
	}
	if c.LearningRate == 0 {
		c.LearningRate = DefaultLearningRate
		if c.Optimizer == "sgd" {
			c.LearningRate = DefaultSGDLearningRate
		}
	}
	if c.Optimizer == "adamw" && c.WeightDecay == 0 {
		c.WeightDecay = DefaultAdamWWeightDecay
	}
	if c.WeightDecay > 0 && c.Optimizer != "adamw" {
		return &ConfigError{Field: "WeightDecay", Value: fmt.Sprint(c.WeightDecay), Reason: "weight decay needs Optimizer \"adamw\" or \"nesterov\""}
	}
	return nil
}

// resolveNesterov resolves nesterov's settings, their defaults airbench94's (nesterovDefaults),
// but those a recipe keeps off (RecipeOff).
func (p *plan) resolveNesterov() error {
	c := &p.Config
	d := nesterovDefaults()
	fill(&c.LearningRate, d.LearningRate)
	fillIf(!slices.Contains(c.RecipeOff, "WeightDecay"), &c.WeightDecay, d.WeightDecay)
	fillIf(!slices.Contains(c.RecipeOff, "Momentum"), &c.Momentum, d.Momentum)
	fill(&c.BiasScaler, d.BiasScaler)
	if c.Momentum < 0 || c.Momentum >= 1 {
		return &ConfigError{Field: "Momentum", Value: fmt.Sprint(c.Momentum), Reason: "use a momentum in [0, 1), e.g. 0.85 (airbench94's)"}
	}
	if c.BiasScaler < 0 {
		return &ConfigError{Field: "BiasScaler", Value: fmt.Sprint(c.BiasScaler), Reason: "must be positive (0: airbench94's 64)"}
	}
	if c.WhitenBiasEpochs > 0 && c.Model != modelAirbench94 {
		return &ConfigError{Field: "WhitenBiasEpochs", Value: fmt.Sprint(c.WhitenBiasEpochs),
			Reason: fmt.Sprintf("model %q has no whitening layer: leave it 0 (it is for model %q)", c.Model, modelAirbench94)}
	}
	return nil
}

// resolveSchedule resolves the learning-rate schedule.
func (p *plan) resolveSchedule() error {
	c := &p.Config
	c.Schedule = nameOr(c.Schedule, ScheduleConstant)
	switch c.Schedule {
	case ScheduleConstant:
		if c.WarmupSteps != 0 || c.MinLearningRate != 0 {
			return &ConfigError{Field: "Schedule", Value: c.Schedule, Reason: "WarmupSteps and MinLearningRate need Schedule \"cosine\""}
		}
	case ScheduleTriangle:
		if c.WarmupSteps != 0 || c.MinLearningRate != 0 {
			return &ConfigError{Field: "Schedule", Value: c.Schedule, Reason: "WarmupSteps and MinLearningRate need Schedule \"cosine\" (the triangle has its own)"}
		}
	case ScheduleCosine:
		if c.WarmupSteps < 0 || c.WarmupSteps >= c.Steps {
			return &ConfigError{Field: "WarmupSteps", Value: fmt.Sprint(c.WarmupSteps), Reason: fmt.Sprintf("use 0 <= WarmupSteps < Steps (%d)", c.Steps)}
		}
		if c.MinLearningRate >= c.LearningRate {
			return &ConfigError{Field: "MinLearningRate", Value: fmt.Sprint(c.MinLearningRate), Reason: fmt.Sprintf("must be below LearningRate (%g)", c.LearningRate)}
		}
	default:
		return &ConfigError{Field: "Schedule", Value: fmt.Sprintf("%q", c.Schedule), Reason: "use \"constant\", \"cosine\" or \"triangle\""}
	}
	return nil
}

// resolveRecipeParts resolves the parts of a recipe that any model and optimizer can use: the
// augmentation scheme, label smoothing and the test-time augmentation of the final evaluation.
func (p *plan) resolveRecipeParts() error {
	c := &p.Config
	augmentation, err := data.ParseAugmentation(string(c.Augmentation))
	if err != nil {
		return &ConfigError{Field: "Augmentation", Value: fmt.Sprintf("%q", c.Augmentation), Reason: strings.TrimPrefix(err.Error(), "data: ")}
	}
	c.Augmentation = augmentation
	if c.LabelSmoothing < 0 || c.LabelSmoothing >= 1 || math.IsNaN(c.LabelSmoothing) {
		return &ConfigError{Field: "LabelSmoothing", Value: fmt.Sprint(c.LabelSmoothing), Reason: "use a value in [0, 1): 0 is none, airbench94 uses 0.2"}
	}
	if c.TTA < 0 {
		c.TTA = 0 // TTAOff
	}
	if c.TTA > TTAMirrorTranslate {
		return &ConfigError{Field: "TTA", Value: fmt.Sprint(c.TTA), Reason: "use 0 (none), 1 (mirror) or 2 (mirror and translate)"}
	}
	return nil
}

// resolvePeriods resolves the periods of validation, checkpoints, History points and log lines.
func (p *plan) resolvePeriods() error {
	c := &p.Config
	switch {
	case c.EvalEvery < 0: // EvalOff
		c.EvalEvery = 0
	case c.EvalEvery == 0 && !c.SkipFinalEval:
		c.EvalEvery = (c.Steps + DefaultEvals - 1) / DefaultEvals
		if c.EvalExamples == 0 {
			c.EvalExamples = DefaultEvalExamples
		}
	}
	if c.CheckpointEvery < 0 || c.EvalExamples < 0 || c.HistoryEvery < 0 || c.LogEvery < 0 || c.CheckpointKeep < 0 || c.EvalBatchSize < 0 {
		return &ConfigError{Field: "CheckpointEvery/EvalExamples/EvalBatchSize/HistoryEvery/LogEvery/CheckpointKeep",
			Value: "negative", Reason: "periods and counts must be >= 0 (0 picks the default)"}
	}
	if c.CheckpointKeep == 0 {
		c.CheckpointKeep = DefaultCheckpointKeep
	}
	if c.EvalBatchSize == 0 {
		c.EvalBatchSize = DefaultEvalBatchSize
	}
	if c.HistoryEvery == 0 {
		c.HistoryEvery = max(1, c.Steps/DefaultMaxPoints)
	}
	if c.LogEvery == 0 {
		c.LogEvery = max(c.HistoryEvery, (c.Steps+DefaultMaxPoints-1)/DefaultMaxPoints) // at most DefaultMaxPoints lines
	}
	return nil
}

// resolveTransfer checks the transfer's recipe (From, Freeze, BackboneLearningRate) against the
// rest of the plan: the source's architecture, the head and the learning rates.
func (p *plan) resolveTransfer() error {
	c := &p.Config
	if p.source == nil && c.Freeze == "" {
		return nil
	}
	if p.source != nil && c.Model != p.source.info.Model {
		return &ArchMismatchError{Dir: c.From, Saved: p.source.info.Model, Requested: c.Model}
	}
	switch c.Freeze {
	case "":
	case FreezeBackbone:
		if c.BackboneLearningRate != 0 {
			return &ConfigError{Field: "BackboneLearningRate", Value: fmt.Sprint(c.BackboneLearningRate),
				Reason: "a frozen backbone does not train: leave it 0 with Freeze \"backbone\""}
		}
	default:
		return &ConfigError{Field: "Freeze", Value: fmt.Sprintf("%q", c.Freeze), Reason: "use \"\" (fine-tune everything) or \"backbone\" (linear probe)"}
	}
	if c.BackboneLearningRate < 0 {
		return &ConfigError{Field: "BackboneLearningRate", Value: fmt.Sprint(c.BackboneLearningRate), Reason: "must not be negative (0: the same as LearningRate)"}
	}
	if c.Head > 0 && c.Head != c.Spec.NumClasses {
		return &ConfigError{Field: "Head", Value: fmt.Sprint(c.Head), Reason: "a transferred run's head is sized from Spec: leave Head 0"}
	}
	return nil
}

// nameOr returns the name s as Config reads it (lower case, without spaces around it), or def
// when it is empty.
func nameOr(s, def string) string {
	if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
		return s
	}
	return def
}
