package training

// The defaults of a Config, in one place: a field left at its zero value takes the value
// named here when the Config is resolved (see resolve). Config's field comments refer to them.
const (
	// DefaultModel is the architecture of Config.Model "" (a transfer takes its source's).
	DefaultModel = "cnn"
	// DefaultBatchSize is the number of images per training step (Config.BatchSize).
	DefaultBatchSize = 32
	// DefaultOptimizer is Config.Optimizer's default (GoMLX's Adam).
	DefaultOptimizer = "adam"
	// DefaultLearningRate is the peak learning rate of the Adam family (Config.LearningRate);
	// DefaultSGDLearningRate that of plain SGD.
	DefaultLearningRate    = 0.001
	DefaultSGDLearningRate = 0.1
	// DefaultAdamWWeightDecay is AdamW's decoupled weight decay (Config.WeightDecay).
	DefaultAdamWWeightDecay = 0.004
	// DefaultEvalBatchSize is the batch size of evaluations (Config.EvalBatchSize,
	// EvalOptions.BatchSize).
	DefaultEvalBatchSize = 100
	// DefaultCheckpointKeep is the number of checkpoints kept in a CheckpointDir.
	DefaultCheckpointKeep = 2
	// DefaultMaxPoints bounds what a run records and writes: a History point every
	// Steps/DefaultMaxPoints steps (at least every step; Config.HistoryEvery), and at most
	// DefaultMaxPoints lines to Config.Log (Config.LogEvery).
	DefaultMaxPoints = 200
)

// Validation during training (Config.EvalEvery 0): about DefaultEvals evaluations per run, on
// the first DefaultEvalExamples test examples each; EvalOff turns them off.
const (
	DefaultEvals        = 5
	DefaultEvalExamples = 500
	EvalOff             = -1
)
