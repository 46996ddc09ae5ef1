package cifarlib

import (
	"slices"
	"strings"

	"github.com/gomlx/gomlx/ml/layers/norm"
	"github.com/gomlx/gomlx/ml/model"
)

// Scope names of ArchAirbench94's variables, under the architecture's scope "/airbench94/"
// (fixed: the training recipe, checkpoints and the PyTorch key map rely on them):
//
//	/airbench94/whiten/conv/weights                  [2, 2, 3, 24]  not trained (set from the data: WhiteningFilters)
//	/airbench94/whiten/conv/biases                   [24]           trained, frozen after a few epochs by the recipe
//	/airbench94/blockN/conv1/conv/weights            [3, 3, Cin, C]
//	/airbench94/blockN/norm1/batch_normalization/... offset (trained), scale (fixed at 1), mean, variance, avg_weight
//	/airbench94/blockN/conv2/conv/weights            [3, 3, C, C]
//	/airbench94/blockN/norm2/batch_normalization/... as norm1
//	/airbench94/head/dense/weights                   [256, NumClasses]  (no bias)
//
// for N = 1, 2, 3 (C = 64, 256, 256).
const (
	AirbenchScopeWhiten = "whiten"
	AirbenchScopeHead   = "head"
	AirbenchScopeConv1  = "conv1"
	AirbenchScopeNorm1  = "norm1"
	AirbenchScopeConv2  = "conv2"
	AirbenchScopeNorm2  = "norm2"
)

// AirbenchBlocks are the scope names of ArchAirbench94's three ConvGroups, in order.
var AirbenchBlocks = []string{"block1", "block2", "block3"}

// AirbenchParamGroup is the parameter group of one of ArchAirbench94's variables in airbench's
// optimizer (Keller Jordan, KellerJordan/cifar10-airbench, airbench 0.1.8, utils.py train):
// torch.optim.SGD with two groups, the batch-norm biases (learning rate times bias_scaler, the
// weight decay divided by it) and every other parameter that requires a gradient.
type AirbenchParamGroup int

const (
	// AirbenchNotTrained is a variable the optimizer never changes: the whitening filters
	// (requires_grad False, set from the data), the batch-norm scales (fixed at 1) and the
	// batch-norm statistics (mean, variance, avg_weight), and any variable that is not one of
	// the model's (e.g. the guards' counters).
	AirbenchNotTrained AirbenchParamGroup = iota
	// AirbenchWhitenBias is the whitening convolution's bias: in airbench's "other" group
	// (AirbenchOther's hyper-parameters) for the first whiten_bias_epochs (3) epochs, then
	// frozen (no gradient, no weight decay, no momentum).
	AirbenchWhitenBias
	// AirbenchNormBias is a batch-norm bias (offset): airbench's norm_biases group, learning rate
	// lr*bias_scaler (64) and weight decay wd/(lr*bias_scaler) in PyTorch's coupled form.
	AirbenchNormBias
	// AirbenchOther is every other trained variable: the convolution kernels of the blocks and
	// the head's weights (airbench's other_params group, learning rate lr, weight decay wd/lr).
	AirbenchOther
)

// String returns "not-trained", "whiten-bias", "norm-bias" or "other".
func (g AirbenchParamGroup) String() string {
	switch g {
	case AirbenchWhitenBias:
		return "whiten-bias"
	case AirbenchNormBias:
		return "norm-bias"
	case AirbenchOther:
		return "other"
	}
	return "not-trained"
}

// AirbenchGroup returns the parameter group of the variable at variablePath (a model.Variable's
// Path(), e.g. "/airbench94/block2/norm1/batch_normalization/offset") in airbench's optimizer.
// Every path that is not one of the model's trained variables (the whitening filters, the
// batch-norm scales and statistics, anything outside "/airbench94/", such as the guards'
// counters or an optimizer's state) is AirbenchNotTrained.
func AirbenchGroup(variablePath string) AirbenchParamGroup {
	rest, ok := strings.CutPrefix(variablePath, model.ScopeSeparator+ArchAirbench94+model.ScopeSeparator)
	if !ok {
		return AirbenchNotTrained
	}
	parts := strings.Split(rest, model.ScopeSeparator)
	last := parts[len(parts)-1]
	switch {
	case len(parts) == 3 && parts[0] == AirbenchScopeWhiten && parts[1] == "conv" && last == "biases":
		return AirbenchWhitenBias
	case len(parts) == 3 && parts[0] == AirbenchScopeHead && parts[1] == "dense" && last == "weights":
		return AirbenchOther
	case len(parts) != 4 || !slices.Contains(AirbenchBlocks, parts[0]):
		return AirbenchNotTrained
	case (parts[1] == AirbenchScopeConv1 || parts[1] == AirbenchScopeConv2) && parts[2] == "conv" && last == "weights":
		return AirbenchOther
	case (parts[1] == AirbenchScopeNorm1 || parts[1] == AirbenchScopeNorm2) && parts[2] == norm.BatchNormalizationScopeName &&
		last == "offset":
		return AirbenchNormBias
	}
	return AirbenchNotTrained
}
