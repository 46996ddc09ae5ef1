package training

import (
	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// Format 1: the checkpoints of the lab before Settings (commit 4805295 and earlier) record
// each setting in a Store parameter of its own, the fields a later version added absent from
// older ones (their zero values are what those versions trained with). settingsV1 reads them
// as Settings, as the run that wrote them resolved its Config: a run of format 1 loads,
// evaluates and resumes (testdata/run-v0.28.3, testdata/run-4805295-recipe).
const (
	ckptV1Dataset        = "cifarlab_dataset"
	ckptV1Labels         = "cifarlab_labels"
	ckptV1Head           = "cifarlab_head"
	ckptV1Batch          = "cifarlab_batch_size"
	ckptV1Seed           = "cifarlab_seed"
	ckptV1Augment        = "cifarlab_augment"
	ckptV1Augmentation   = "cifarlab_augmentation"
	ckptV1Schedule       = "cifarlab_schedule"
	ckptV1Steps          = "cifarlab_steps"
	ckptV1Warmup         = "cifarlab_warmup_steps"
	ckptV1MinLR          = "cifarlab_min_learning_rate"
	ckptV1Decay          = "cifarlab_weight_decay"
	ckptV1Unguarded      = "cifarlab_unguarded"
	ckptV1Recipe         = "cifarlab_recipe"
	ckptV1Momentum       = "cifarlab_momentum"
	ckptV1BiasScaler     = "cifarlab_bias_scaler"
	ckptV1WhitenBias     = "cifarlab_whiten_bias_epochs"
	ckptV1LabelSmoothing = "cifarlab_label_smoothing"
	ckptV1Lookahead      = "cifarlab_lookahead"
	ckptV1From           = "cifarlab_transferred_from"
	ckptV1Freeze         = "cifarlab_freeze"
	ckptV1BackboneLR     = "cifarlab_backbone_learning_rate"
)

// settingsV1 reads the settings of a format-1 checkpoint of a model of architecture arch from
// its root scope's parameters. Its optimizer is nil for an imported run (no training settings).
func settingsV1(root *model.Scope, arch string) Settings {
	get := func(key string) string { return model.GetParamOr(root, key, "") }
	spec, _ := data.SpecByName(get(ckptV1Dataset), get(ckptV1Labels))
	augmentation := data.Augmentation(get(ckptV1Augmentation)) // "": the default, crop-flip
	if augmentation == "" {
		augmentation = data.AugmentCropFlip
	}
	s := Settings{Recipe: get(ckptV1Recipe),
		Data: DataSettings{Spec: spec, BatchSize: model.GetParamOr(root, ckptV1Batch, 0), Augment: model.GetParamOr(root, ckptV1Augment, false),
			Augmentation: augmentation},
		Model: ModelSettings{Arch: arch, Head: model.GetParamOr(root, ckptV1Head, 0), Unguarded: model.GetParamOr(root, ckptV1Unguarded, false)},
		Schedule: optimizers.Schedule{Name: get(ckptV1Schedule), WarmupSteps: model.GetParamOr(root, ckptV1Warmup, 0),
			MinLearningRate: model.GetParamOr(root, ckptV1MinLR, 0.0)},
		Run: RunSettings{Steps: model.GetParamOr(root, ckptV1Steps, 0), Seed: model.GetParamOr(root, ckptV1Seed, int64(0)),
			LabelSmoothing: model.GetParamOr(root, ckptV1LabelSmoothing, 0.0), Lookahead: model.GetParamOr(root, ckptV1Lookahead, false)},
		Transfer: TransferSettings{From: get(ckptV1From), Freeze: get(ckptV1Freeze), BackboneLearningRate: model.GetParamOr(root, ckptV1BackboneLR, 0.0)},
		Compute:  ComputeSettings{Precision: cifarlib.PrecisionF32},
	}
	s.Optimizer = optimizerV1(get(optimizer.ParamOptimizer), model.GetParamOr(root, optimizer.ParamLearningRate, 0.0),
		model.GetParamOr(root, ckptV1Decay, 0.0), model.GetParamOr(root, ckptV1Momentum, 0.0), model.GetParamOr(root, ckptV1BiasScaler, 0.0),
		model.GetParamOr(root, ckptV1WhitenBias, 0))
	return s
}

// optimizerV1 is the optimizer a format-1 checkpoint names, with its settings (those its
// algorithm has; the others were zero); nil for none (an imported run) or a name this lab does
// not know.
func optimizerV1(name string, lr, decay, momentum, biasScaler float64, whitenBiasEpochs int) optimizers.Optimizer {
	o, err := optimizers.New(name)
	if err != nil {
		return nil
	}
	for param, v := range map[string]float64{"LearningRate": lr, "WeightDecay": decay, "Momentum": momentum, "BiasScaler": biasScaler,
		"WhitenBiasEpochs": float64(whitenBiasEpochs)} {
		o, _ = optimizers.WithParam(o, param, v)
	}
	return o
}
