package training

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"
)

// Settings are a training run's settings, written once: what it trains, on which data, how it
// optimises, evaluates and checkpoints, what it transfers from and what it computes on. They are
// a value, nested by part, complete and serialisable: Defaults gives every field its value, a
// recipe (Airbench94) returns its own, and a caller overrides field by field. run.json stores
// them, a checkpoint's CheckpointInfo is them, the lab process sends them, and Fields is their
// table (the flags of `cifarlab train`, a sweep's axes, run.json's params). What is live (the
// backend, the splits, the log, the hooks, the program cache, the clock) is the run's Env.
type Settings struct {
	// Recipe names the recipe the settings started from (Recipes: "airbench94"), "" for
	// Defaults. It changes nothing itself: the run's record and summary say it.
	Recipe string `json:"recipe,omitempty"`
	// Data is the dataset, its folder, the batch and the augmentation.
	Data DataSettings `json:"data"`
	// Model is the architecture, its head and its guards.
	Model ModelSettings `json:"model"`
	// Optimizer is the optimiser, one typed value per algorithm (package optimizers): Adam,
	// AdamW, Adamax, RMSProp, SGD or Nesterov (airbench94's).
	Optimizer optimizers.Optimizer `json:"-"` // in JSON through settingsJSON
	// Schedule is the learning-rate schedule (package optimizers: constant, cosine, triangle).
	Schedule optimizers.Schedule `json:"schedule"`
	// Run is the length of the run, its seed and what the loss and the weights do besides the
	// optimiser (label smoothing, lookahead).
	Run RunSettings `json:"run"`
	// Eval is the validation during training and the final evaluation.
	Eval EvalSettings `json:"eval"`
	// Checkpoint is where checkpoints go, how often and how many are kept.
	Checkpoint CheckpointSettings `json:"checkpoint"`
	// Transfer is the trained run this one starts from, and what it trains of it.
	Transfer TransferSettings `json:"transfer"`
	// Compute is the backend, the devices and the precision.
	Compute ComputeSettings `json:"compute"`
	// Record is what the run writes as it goes: History points, log lines and its params.
	Record RecordSettings `json:"record"`
}

// DataSettings are the data part of Settings.
type DataSettings struct {
	// Spec is the dataset: data.CIFAR10() (Defaults), data.CIFAR100(LabelsFine) or
	// data.CIFAR100(LabelsCoarse). It travels as its ID.
	Spec data.Spec `json:"dataset"`
	// Dir is the folder holding the dataset (as given to data.LoadSplit); Defaults:
	// data.DefaultDir(). An Env's splits, when given, are used instead.
	Dir string `json:"dir"`
	// BatchSize is the number of images per training step, the global batch across devices.
	BatchSize int `json:"batch_size"`
	// Augment turns on the training data's augmentation, the scheme Augmentation names.
	Augment bool `json:"augment"`
	// Augmentation is the scheme Augment applies: data.AugmentCropFlip (Defaults: random crops
	// of the image padded by 4 pixels and random flips) or data.AugmentAltFlip (airbench's
	// alternating flip and 2-pixel reflect-padded translation).
	Augmentation data.Augmentation `json:"augmentation"`
}

// ModelSettings are the model part of Settings.
type ModelSettings struct {
	// Arch is the architecture: "cnn" (Defaults), "linear", "resnet18", "resnet20" or
	// "airbench94"; ArchOfSource takes a transfer's source run's (Transfer.From).
	Arch string `json:"arch"`
	// Head is the classifier head's width; 0 sizes it from the dataset. A head that differs
	// from the dataset's classes only exists to reproduce the CIFAR-100/10-class-head bug: with
	// the guards on, training stops before the first step with a *cifarlib.HeadMismatchError.
	Head int `json:"head,omitempty"`
	// Unguarded switches the guards off and trains with GoMLX's plain loss, where a label
	// outside the head gets exactly zero loss. Result.ZeroLoss then says how many examples that hit.
	Unguarded bool `json:"unguarded,omitempty"`
}

// ArchOfSource is ModelSettings.Arch of a transferred run that takes its source run's
// architecture (the CLI's --from without --model).
const ArchOfSource = "source"

// RunSettings are the run part of Settings: its length, its seed, and what the loss and the
// weights do besides the optimiser.
type RunSettings struct {
	// Steps is the global step to train to: a run resumed from a checkpoint at step s trains
	// Steps-s more steps. Set Steps or Epochs, not both.
	Steps int `json:"steps,omitempty"`
	// Epochs, instead of Steps, is the length of the run in passes over the training split:
	// Steps = ceil(Epochs * steps per epoch), with len(train)/BatchSize steps per epoch (the
	// last partial batch of each epoch dropped), as airbench counts. It may be fractional
	// (airbench94 trains 9.9 epochs).
	Epochs float64 `json:"epochs,omitempty"`
	// Seed seeds the weight initialisation and the order (and augmentation) of the training data.
	Seed int64 `json:"seed"`
	// LabelSmoothing mixes the training targets with the uniform distribution, as PyTorch's
	// CrossEntropyLoss(label_smoothing=...): in [0, 1), 0 is none. The guards are the same with it.
	LabelSmoothing float64 `json:"label_smoothing"`
	// Lookahead keeps airbench's lookahead EMA of the model's weights and batch-norm statistics,
	// resets the weights to it every 5 steps and ends the run on it (see lookaheadOptimizer),
	// with any optimizer. Its copies are saved in checkpoints.
	Lookahead bool `json:"lookahead"`
}

// Validation during training (EvalSettings.Every).
const (
	// EvalAuto validates about defaultEvals times per run (every Steps/defaultEvals steps,
	// rounded up) when the run evaluates at all (not SkipFinal), as Lightning validates while it
	// trains.
	EvalAuto = 0
	// EvalOff leaves only the final evaluation.
	EvalOff = -1
)

// EvalSettings are the evaluation part of Settings: the validations on the test split while
// the run trains (recorded in its History) and the final evaluation.
type EvalSettings struct {
	// Every validates every this many steps; EvalAuto (Defaults) about defaultEvals times per
	// run; EvalOff never.
	Every int `json:"every"`
	// Examples limits each validation to the first this many test examples (Defaults:
	// defaultEvalExamples); 0 is the whole split. The final evaluation always uses the whole split.
	Examples int `json:"examples"`
	// BatchSize is the batch size of evaluations.
	BatchSize int `json:"batch_size"`
	// SkipFinal skips the evaluation on the test split at the end of the run.
	SkipFinal bool `json:"skip_final,omitempty"`
	// TTA is the test-time augmentation of the final evaluation (EvalOptions.TTA): TTANone
	// (Defaults), TTAMirror or TTAMirrorTranslate. Validations are without it, as airbench's.
	TTA int `json:"tta"`
}

// CheckpointSettings are the checkpoint part of Settings.
type CheckpointSettings struct {
	// Dir, when set, is the run's folder: where checkpoints, run.json and the TensorBoard events
	// are written, and where a run resumes from: if it holds a checkpoint, training continues
	// from its step with the same data order, so the parameters equal those of an uninterrupted
	// run. It is saved at the end, when interrupted and every Every steps; not after a failed step.
	Dir string `json:"dir,omitempty"`
	// Every saves a checkpoint every this many steps; 0 saves only at the end or on interruption.
	Every int `json:"every,omitempty"`
	// Keep is the number of checkpoints kept in Dir.
	Keep int `json:"keep"`
}

// TransferSettings are the transfer part of Settings (see transfer.go).
type TransferSettings struct {
	// From, when set, is the checkpoint directory of a trained cifarlib run to transfer from:
	// its backbone is carried bit for bit, its head too when the dataset has the source's number
	// of classes (unless NewHead), else the head is initialised afresh at the dataset's width; the
	// optimizer state and global step start again.
	From string `json:"from,omitempty"`
	// NewHead initialises a transferred run's head afresh from the seed even when the dataset
	// has the source's number of classes (by default that head is carried with the backbone).
	NewHead bool `json:"new_head,omitempty"`
	// Freeze is "" (fine-tune everything) or FreezeBackbone (a linear probe: only the head
	// trains; the backbone's weights and batch-norm statistics stay as carried). Without From the
	// backbone stays as initialised from the seed: the random-feature baseline of a linear probe.
	Freeze string `json:"freeze,omitempty"`
	// BackboneLearningRate is the backbone's learning rate when fine-tuning a transferred run
	// (the head uses the optimizer's); 0: the same as the head's. Needs From, not with Freeze.
	BackboneLearningRate float64 `json:"backbone_learning_rate,omitempty"`
}

// ComputeSettings are the compute part of Settings.
type ComputeSettings struct {
	// Backend names the backend created when the Env has none (backends.New): "auto"
	// (Defaults), "cpu", "go" or "cuda".
	Backend string `json:"backend"`
	// Devices is the number of devices each global batch is sharded across (data parallelism,
	// one program partitioned by XLA): 1 (Defaults) trains on one device, backends.DevicesAll on
	// every device of the backend. Data.BatchSize must be a multiple of it. Results do not
	// depend on it, beyond float32 rounding.
	Devices int `json:"devices"`
	// Precision is what the convolutions and matrix products compute in: cifarlib.PrecisionF32
	// (Defaults) or cifarlib.PrecisionBF16Mixed (bfloat16 products, float32 variables, loss,
	// guards and checkpoints). A backend that cannot compute it fails with *PrecisionError.
	Precision cifarlib.Precision `json:"precision"`
}

// RecordSettings are what a run records as it goes.
type RecordSettings struct {
	// HistoryEvery records a History point every this many steps; 0: Steps/defaultMaxPoints,
	// at least 1.
	HistoryEvery int `json:"history_every,omitempty"`
	// LogEvery is the period, in steps, of the lines written to the Env's Log; 0: HistoryEvery,
	// or more to write at most defaultMaxPoints lines.
	LogEvery int `json:"log_every,omitempty"`
	// Params are the run's hyper-parameters as the user wrote them (a field's name in Fields ->
	// its value, e.g. the flags of `cifarlab train` that were set, a sweep task's grid values),
	// recorded in run.json and shown on TensorBoard's HParams dashboard, like Lightning's
	// log_hyperparams. Nil: none recorded.
	Params map[string]string `json:"params,omitempty"`
}

// The defaults of Settings (see Defaults), and of the values derived from them.
const (
	// defaultModel is the architecture of Defaults.
	defaultModel = cifarlib.ArchCNN
	// defaultBatchSize is the number of images per training step.
	defaultBatchSize = 32
	// defaultEvalBatchSize is the batch size of evaluations (EvalSettings.BatchSize, EvalOptions.BatchSize).
	defaultEvalBatchSize = 100
	// defaultCheckpointKeep is the number of checkpoints kept in a run's folder.
	defaultCheckpointKeep = 2
	// defaultMaxPoints bounds what a run records and writes: a History point every
	// Steps/defaultMaxPoints steps (at least every step), and at most defaultMaxPoints log lines.
	defaultMaxPoints = 200
	// defaultEvals is about how many validations EvalAuto makes per run, on the first
	// defaultEvalExamples test examples each.
	defaultEvals        = 5
	defaultEvalExamples = 500
)

// Defaults returns the settings of a run that sets nothing but its length (Run.Steps or
// Run.Epochs): the cnn on CIFAR-10 from data.DefaultDir(), batch defaultBatchSize, GoMLX's Adam,
// a constant learning rate, about defaultEvals validations on defaultEvalExamples test
// examples, the guards on, one device of the "auto" backend in float32.
func Defaults() Settings {
	return Settings{
		Data:       DataSettings{Spec: data.CIFAR10(), Dir: data.DefaultDir(), BatchSize: defaultBatchSize, Augmentation: data.AugmentCropFlip},
		Model:      ModelSettings{Arch: defaultModel},
		Optimizer:  optimizers.Default(),
		Schedule:   optimizers.Schedule{Name: optimizers.ScheduleConstant},
		Eval:       EvalSettings{Every: EvalAuto, Examples: defaultEvalExamples, BatchSize: defaultEvalBatchSize},
		Checkpoint: CheckpointSettings{Keep: defaultCheckpointKeep},
		Compute:    ComputeSettings{Backend: backends.Auto, Devices: 1, Precision: cifarlib.PrecisionF32},
	}
}

// headWidth is the classifier width the settings ask for.
func (s *Settings) headWidth() int {
	if s.Model.Head > 0 {
		return s.Model.Head
	}
	return s.Data.Spec.NumClasses
}

// TopK returns the k of the top-k accuracy that training with s records next to the accuracy
// (History.TopK, HistoryPoint.TopK): 5 on a dataset of more than 10 classes with a head wider
// than 5 (CIFAR-100), else 0.
func (s *Settings) TopK() int {
	if s.Data.Spec.NumClasses > 10 && s.headWidth() > 5 {
		return 5
	}
	return 0
}

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

// Recipes: named functions returning Settings, which a caller overrides field by field.

// recipeAirbench94 is the name of Airbench94.
const recipeAirbench94 = "airbench94"

// recipes are the named recipes.
var recipes = map[string]func() Settings{recipeAirbench94: Airbench94}

// Airbench94 returns Keller Jordan's airbench94 (airbench 0.1.8 from PyPI, lib_airbench94.py's
// hyp and utils.py's train), 94% on CIFAR-10 in 9.9 epochs: its network, batch 1024, Nesterov
// SGD (lr 11.5 per 1024 examples, momentum 0.85, weight decay 0.0153, bias scaler 64, the
// whitening bias frozen after 3 epochs), the triangle schedule, label smoothing 0.2, lookahead,
// the alternating-flip augmentation and a final TTA of level 2; the rest is Defaults'.
func Airbench94() Settings {
	s := Defaults()
	s.Recipe = recipeAirbench94
	s.Model.Arch = cifarlib.ArchAirbench94
	s.Run.Epochs = 9.9
	s.Data.BatchSize = 1024
	n, _ := optimizers.New((optimizers.Nesterov{}).Algorithm()) // airbench94's hyp.opt
	nesterov := n.(optimizers.Nesterov)
	nesterov.WhitenBiasEpochs = 3
	s.Optimizer = nesterov
	s.Schedule.Name = optimizers.ScheduleTriangle
	s.Run.LabelSmoothing = 0.2
	s.Run.Lookahead = true
	s.Eval.TTA = TTAMirrorTranslate
	s.Data.Augment, s.Data.Augmentation = true, data.AugmentAltFlip
	return s
}

// Recipes lists the recipes' names.
func Recipes() []string { return slices.Sorted(maps.Keys(recipes)) }

// Recipe returns the settings of the recipe called name (any case, spaces around it ignored),
// Defaults for "", or a *ConfigError of Recipe.
func Recipe(name string) (Settings, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return Defaults(), nil
	}
	r, ok := recipes[name]
	if !ok {
		return Settings{}, &ConfigError{Field: "Recipe", Value: fmt.Sprintf("%q", name), Reason: "use \"\" (none) or one of " + strings.Join(Recipes(), ", ")}
	}
	return r(), nil
}

// DescribeRecipe says in one line what s trains with under its Recipe, before the run, as the
// run's summary says it after (its "recipe ..." line), e.g.
//
//	recipe airbench94: airbench94, 9.9 epochs at batch 1024, nesterov lr 11.5 (per 1024 examples) momentum 0.85 weight decay 0.0153 bias scaler 64, whitening bias frozen after 3 epochs, triangle schedule, label smoothing 0.2, lookahead true, altflip-translate augmentation, final TTA 2
//
// Settings without a Recipe, or with an unknown one, are a *ConfigError.
func DescribeRecipe(s Settings) (string, error) {
	if strings.TrimSpace(s.Recipe) == "" {
		return "", &ConfigError{Field: "Recipe", Value: `""`, Reason: "DescribeRecipe describes a recipe: name one of " + strings.Join(Recipes(), ", ")}
	}
	if _, err := Recipe(s.Recipe); err != nil {
		return "", err
	}
	return "recipe " + strings.ToLower(strings.TrimSpace(s.Recipe)) + ": " + recipeSettings(&s, 0), nil
}

// recipeSettings says, in one line, the settings of s that a recipe decides (for the summary,
// and DescribeRecipe before the run, whose length may still be in epochs). stepsPerEpoch is the
// steps of an epoch of the run's data, 0 when not known yet: the whitening bias's freeze is said
// as it happens in the run described (never, when the run ends before it).
func recipeSettings(s *Settings, stepsPerEpoch int) string {
	length := fmt.Sprintf("%d steps", s.Run.Steps)
	if s.Run.Steps == 0 {
		length = fmt.Sprintf("%g epochs", s.Run.Epochs)
	}
	out := fmt.Sprintf("%s, %s at batch %d, %s lr %g", s.Model.Arch, length, s.Data.BatchSize, algorithm(s.Optimizer), learningRate(s.Optimizer))
	if n, ok := s.Optimizer.(optimizers.Nesterov); ok {
		out += fmt.Sprintf(" (per 1024 examples) momentum %g weight decay %g bias scaler %g", n.Momentum, n.WeightDecay, n.BiasScaler)
		if n.WhitenBiasEpochs > 0 {
			out += ", " + whitenBiasFreeze(s, n.WhitenBiasEpochs, stepsPerEpoch)
		}
	}
	out += fmt.Sprintf(", %s schedule, label smoothing %g, lookahead %t", s.Schedule.Name, s.Run.LabelSmoothing, s.Run.Lookahead)
	if s.Data.Augment {
		out += ", " + s.Data.Augmentation.String() + " augmentation"
	}
	return out + fmt.Sprintf(", final TTA %d", s.Eval.TTA)
}

// whitenBiasFreeze says when the whitening bias of a run of s freezes, after epochs epochs of
// stepsPerEpoch steps (0: not known): never, when the run ends first (the bias then trains
// throughout).
func whitenBiasFreeze(s *Settings, epochs, stepsPerEpoch int) string {
	frozen := fmt.Sprintf("whitening bias frozen after %d epochs", epochs)
	switch {
	case s.Run.Steps == 0 && s.Run.Epochs <= float64(epochs):
		return fmt.Sprintf("whitening bias trained throughout (the run's %g epochs end before its freeze after %d)", s.Run.Epochs, epochs)
	case s.Run.Steps > 0 && stepsPerEpoch > 0 && s.Run.Steps <= epochs*stepsPerEpoch:
		return fmt.Sprintf("whitening bias trained throughout (the run's %d steps end before its freeze after %d epochs, step %d)",
			s.Run.Steps, epochs, epochs*stepsPerEpoch)
	case s.Run.Steps > 0 && stepsPerEpoch > 0:
		return frozen + fmt.Sprintf(" (step %d)", epochs*stepsPerEpoch)
	case s.Run.Steps > 0:
		return frozen + ", if the run's steps last that long"
	}
	return frozen
}

// warnings says what makes a run of p learn nothing though it trains: with the lookahead on,
// a run of fewer than optimizers.LookaheadEvery steps ends on its initial weights, as airbench's does (a
// recipe run of 1 epoch of 5000 images at batch 1024 is 4 steps). Such a run is not refused: it
// is a legitimate smoke test of the recipe (does it compile and run, how fast); the run says it
// before it trains (Trainer.Warnings) and in its summary, and `cifarlab runs` marks its
// accuracy as chance level.
func (p *plan) warnings() []string {
	if !p.Run.Lookahead || p.Run.Steps >= optimizers.LookaheadEvery {
		return nil
	}
	off := "turn the lookahead off (Run.Lookahead false, the setting lookahead=false)"
	if p.Recipe != "" {
		off = "leave the recipe's lookahead out (Run.Lookahead false, the setting lookahead=false)"
	}
	return []string{fmt.Sprintf("this run learns nothing: with the lookahead on, a run of %d steps ends on its initial weights "+
		"(the lookahead first averages the weights at step %d and the run ends on that average); train at least %d steps "+
		"(more epochs, or a smaller batch), or %s", p.Run.Steps, optimizers.LookaheadEvery, optimizers.LookaheadEvery, off)}
}
