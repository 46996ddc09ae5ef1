package training

import (
	"fmt"
	"io"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/compute"
)

// Learning-rate schedules accepted by Config.Schedule.
const (
	// ScheduleConstant keeps the learning rate fixed (the default).
	ScheduleConstant = "constant"
	// ScheduleCosine anneals the learning rate from LearningRate to MinLearningRate along half a
	// cosine over the run's Steps, after WarmupSteps of linear warm-up (GoMLX's cosineschedule).
	ScheduleCosine = "cosine"
	// ScheduleTriangle is airbench's triangle: the learning rate rises linearly from 0.2 to 1
	// times LearningRate over the first 23% of the run's Steps, then falls linearly to 0.07 times
	// it at the last step (see triangle).
	ScheduleTriangle = "triangle"
)

// Optimizers accepted by Config.Optimizer (GoMLX's optimizer package, and airbench's
// OptimizerNesterov).
var trainOptimizers = []string{"adam", "adamw", "adamax", "rmsprop", "sgd", OptimizerNesterov}

// ProgressMode says whether Train shows GoMLX's progress bar.
type ProgressMode int

const (
	// ProgressAuto shows the progress bar in a GoNB notebook or when stdout is a terminal.
	ProgressAuto ProgressMode = iota
	// ProgressOn always shows it (it writes to stdout).
	ProgressOn
	// ProgressOff never shows it.
	ProgressOff
)

// Config describes one training run. Only Spec and Steps are required; the zero value of
// every other field picks the documented default. The guarded loss is on unless Unguarded is set.
type Config struct {
	// Recipe, when set, is a named recipe whose settings fill every field left at its zero
	// value (recipe.go): RecipeAirbench94. Fields set explicitly win. "" (the default): none.
	Recipe string
	// RecipeOff names fields that the Recipe leaves at their zero value, whose zero is a
	// setting of its own (RecipeOffFields: e.g. "LabelSmoothing" for none, "Lookahead" for
	// none): an ablation of the recipe.
	RecipeOff []string

	// Spec is the dataset: CIFAR10(), CIFAR100(LabelsFine) or CIFAR100(LabelsCoarse).
	Spec data.Spec
	// DataDir is the folder holding the dataset (as given to LoadSplit). Default: data.DefaultDir().
	DataDir string
	// TrainRecords and TestRecords, when set, are used instead of loading the splits from DataDir.
	TrainRecords, TestRecords *data.Records

	// Model is the architecture: "cnn" (DefaultModel), "linear", "resnet18", "resnet20" or
	// "airbench94".
	Model string
	// Head overrides the classifier head width; 0 (the default) sizes it from Spec. A head that
	// differs from Spec.NumClasses only exists to reproduce the CIFAR-100/10-class-head bug: with the
	// guard on, training stops before the first step with a *HeadMismatchError.
	Head int
	// Unguarded switches the guards off and trains with GoMLX's plain loss, where a label outside
	// the head gets exactly zero loss. Result.ZeroLoss then says how many examples that hit.
	Unguarded bool

	// Backend is the compute backend to use; when nil one is created with backends.New(backends.Name).
	Backend compute.Backend
	// backends.Name is given to backends.New when Backend is nil: "auto" (default), "cpu", "go", "cuda".
	BackendName string
	// Devices is the number of devices each global batch is sharded across (data parallelism,
	// one program partitioned by XLA; see newDistributedDataset): 0 or 1 trains on one device,
	// DevicesAll on every device of the backend. BatchSize must be a multiple of it. With
	// Backend nil and an XLA CPU backend, the backend is created with that many CPU devices
	// (backends.NewWithDevices). Results do not depend on it, beyond float32 rounding.
	Devices int
	// Precision is what the convolutions and matrix products compute in: PrecisionF32 (""
	// or "f32", the default) or PrecisionBF16Mixed ("bf16-mixed": bfloat16 products, float32
	// variables, loss, guards and checkpoints; see Precision). A backend that cannot compute it
	// fails with *PrecisionError, never silently in float32.
	Precision cifarlib.Precision

	// Steps is the global step to train to. A run resumed from a checkpoint at step s trains
	// Steps-s more steps. Set Steps or Epochs, not both.
	Steps int
	// Epochs, instead of Steps, is the length of the run in passes over the training split:
	// Steps = ceil(Epochs * steps per epoch), with len(train)/BatchSize steps per epoch (the
	// last partial batch of each epoch dropped), as airbench counts. It may be fractional
	// (airbench94 trains 9.9 epochs).
	Epochs float64
	// BatchSize is the number of images per step. Default DefaultBatchSize (32).
	BatchSize int
	// Seed seeds the weight initialisation and the order (and augmentation) of the training data.
	Seed int64
	// Augment turns on the training data's augmentation, the scheme Augmentation names.
	Augment bool
	// Augmentation is the scheme Augment applies: data.AugmentCropFlip ("" or "crop-flip",
	// the default: random crops of the image padded by 4 pixels and random flips) or
	// data.AugmentAltFlip ("altflip-translate": airbench's alternating flip and 2-pixel
	// reflect-padded translation).
	Augmentation data.Augmentation

	// Optimizer is "adam" (DefaultOptimizer), "adamw", "adamax", "rmsprop", "sgd" (plain, no
	// decay) or OptimizerNesterov ("nesterov": airbench94's Nesterov SGD with decoupled
	// hyper-parameters, see nesterovOptimizer).
	Optimizer string
	// LearningRate is the peak learning rate. Default: DefaultLearningRate (0.001) for the Adam
	// family, DefaultSGDLearningRate (0.1) for sgd; for nesterov the rate per 1024 examples,
	// default the airbench94 recipe's (11.5).
	LearningRate float64
	// WeightDecay is AdamW's decoupled weight decay (default DefaultAdamWWeightDecay, 0.004), or
	// nesterov's decay per 1024 examples (default the recipe's, 0.0153); other optimizers take none.
	WeightDecay float64
	// Momentum is nesterov's momentum (default the recipe's, 0.85); other optimizers take none.
	Momentum float64
	// BiasScaler multiplies nesterov's learning rate (not its weight decay) for batch-norm biases
	// (default the recipe's, 64); other optimizers take none.
	BiasScaler float64
	// WhitenBiasEpochs trains airbench94's whitening bias for that many epochs, then freezes it
	// (nesterov only; the recipe's 3). 0: it trains throughout.
	WhitenBiasEpochs int
	// LabelSmoothing mixes the training targets with the uniform distribution, as PyTorch's
	// CrossEntropyLoss(label_smoothing=...): in [0, 1), 0 (the default) is none. The guards
	// are the same with it.
	LabelSmoothing float64
	// Lookahead keeps airbench's lookahead EMA of the model's weights and batch-norm
	// statistics, resets the weights to it every 5 steps and ends the run on it (see
	// lookaheadOptimizer), with any optimizer. Its copies are saved in checkpoints.
	Lookahead bool
	// Schedule is ScheduleConstant (default), ScheduleCosine or ScheduleTriangle.
	Schedule string
	// WarmupSteps of linear warm-up before the cosine schedule (cosine only).
	WarmupSteps int
	// MinLearningRate is where the cosine schedule ends. Default 0.
	MinLearningRate float64

	// CheckpointDir, when set, is where checkpoints are saved, and where a run resumes from: if it
	// holds a checkpoint, training continues from its step with the same data order, so the
	// parameters equal those of an uninterrupted run (resuming at step s draws and discards s
	// batches on the host). It is saved at the end, when interrupted and every CheckpointEvery
	// steps; not after a failed step.
	CheckpointDir string
	// CheckpointEvery saves a checkpoint every this many steps; 0 saves only at the end or on
	// interruption.
	CheckpointEvery int
	// CheckpointKeep is the number of checkpoints kept in CheckpointDir. Default
	// DefaultCheckpointKeep (2).
	CheckpointKeep int

	// EvalEvery evaluates on the test split every this many steps (recorded in the History),
	// as Lightning validates while it trains. 0, the default, evaluates about DefaultEvals times
	// per run (every Steps/DefaultEvals steps, rounded up) when the run evaluates at all (not
	// SkipFinalEval); EvalOff (any negative value) leaves only the final evaluation.
	EvalEvery int
	// EvalExamples limits the periodic evaluations to the first this many test examples: 0 is
	// the whole test split, or, for the evaluations EvalEvery 0 adds, DefaultEvalExamples. The
	// final evaluation always uses the whole test split.
	EvalExamples int
	// EvalBatchSize is the batch size of evaluations. Default DefaultEvalBatchSize (100).
	EvalBatchSize int
	// SkipFinalEval skips the evaluation on the test split at the end of Train.
	SkipFinalEval bool
	// TTA is the test-time augmentation of the final evaluation (EvalOptions.TTA): 0 none (or,
	// with a Recipe, the recipe's level), 1 mirror, 2 mirror and translate; TTAOff (any negative
	// value) none even with a Recipe. Validation during training is without it, as airbench's.
	TTA int

	// HistoryEvery records a History point every this many steps. Default:
	// Steps/DefaultMaxPoints, at least 1.
	HistoryEvery int
	// Progress controls GoMLX's progress bar (terminal and GoNB). Default ProgressAuto.
	Progress ProgressMode
	// Plot draws loss and accuracy curves that update during training, in a GoNB notebook
	// (GoMLX's plotly support); outside a notebook it does nothing.
	Plot bool
	// Log receives one line per LogEvery steps and notes such as "resumed from step N"; nil: silent.
	Log io.Writer
	// LogEvery is the period, in steps, of the lines written to Log. Default: HistoryEvery, or
	// more to write at most DefaultMaxPoints lines (Steps/DefaultMaxPoints rounded up).
	LogEvery int
	// OnPoint, when set, is called with each History point as it is recorded; an error stops
	// training (the checkpoint is still saved).
	OnPoint func(runs.HistoryPoint) error
	// OnEvent, when set, is called with what the run starts doing, as it starts: creating the
	// backend, loading the data, each compile (and why), each step, each evaluation's progress,
	// each checkpoint (Event). It runs on the training goroutine: keep it short. A Status turns
	// the events into a line that says what the run is doing from its first second.
	OnEvent func(Event)

	// From, when set, is the checkpoint directory of a trained cifarlib run to transfer from
	// (see transfer.go): its backbone is carried bit for bit, its head too when Spec has the
	// source's number of classes (unless NewHead), else the head is initialised afresh at Spec's
	// width; the optimizer state and global step start again. Model "" takes the run's.
	From string
	// NewHead initialises a transferred run's head afresh from Seed even when Spec has the
	// source's number of classes (by default that head is carried with the backbone).
	NewHead bool
	// Freeze is "" (fine-tune everything) or FreezeBackbone (a linear probe: only the head
	// trains; the backbone's weights and batch-norm statistics stay as carried). Without From the
	// backbone stays as initialised from Seed: the random-feature baseline of a linear probe.
	Freeze string
	// BackboneLearningRate is the backbone's learning rate when fine-tuning a transferred run
	// (the head uses LearningRate); 0: the same as LearningRate. Needs From, not with Freeze.
	BackboneLearningRate float64

	// TimelineFrom is when the run's timeline (Result.Timeline) starts: zero, the process start
	// (a notebook cell's program, a CLI run); a process that outlives notebook cells gives the
	// start of the cell it trains for.
	TimelineFrom time.Time

	// Programs, when set, keeps the run's compiled programs for later runs in this process, and
	// gives this run those of an earlier run with the same ProgramKey: it then compiles nothing
	// (see Programs). Nil: the run compiles its own and keeps nothing.
	Programs *Programs

	// Params are the run's hyperparameters as the user wrote them (name -> value, e.g. the
	// flags of `cifarlab train` that were set), recorded in run.json and shown on TensorBoard's
	// HParams dashboard, like Lightning's log_hyperparams. Nil: none recorded.
	Params map[string]string
}

// ConfigError reports an invalid Config field: which field, its value and how to fix it.
type ConfigError struct {
	// Field is the Config field name, e.g. "Steps".
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

// headWidth is the classifier width the config asks for.
func (c *Config) headWidth() int {
	if c.Head > 0 {
		return c.Head
	}
	return c.Spec.NumClasses
}

// topK returns 5 for CIFAR-100-sized heads (fine and coarse) and 0 (no top-k metric) otherwise.
func (c *Config) topK() int {
	if c.Spec.NumClasses > 10 && c.headWidth() > 5 {
		return 5
	}
	return 0
}
