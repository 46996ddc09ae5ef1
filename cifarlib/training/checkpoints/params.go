package checkpoints

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// Store parameters under which a checkpoint records the run that wrote it (GoMLX's checkpoint
// package saves the Store's parameters in its JSON file): the settings' format and the settings
// as JSON; the model's architecture too, which says that cifarlib wrote it (format 1 has it as
// well); a run whose model expects its own input normalisation (an imported model's) records it
// as "a,b,c" (absent for a run that uses its dataset's statistics, as every run did before they
// existed), and an imported run the file it was made from. GoMLX's own optimizer and
// learning_rate parameters are kept as GoMLX reads them.
const (
	paramFormat    = "cifarlab_format"
	paramSettings  = "cifarlab_settings"
	paramModel     = "cifarlab_model"
	paramInputMean = "cifarlab_input_mean"
	paramInputStd  = "cifarlab_input_std"
	paramImported  = "cifarlab_imported_from"
)

// Params are what a checkpoint records of the run that wrote it, besides its variables.
type Params struct {
	// Format is the settings' format: 1 for a run of the lab before training.Settings, whose
	// checkpoints record each setting in a Store parameter of its own (the caller reads them),
	// else that of Settings, in JSON.
	Format   int
	Settings string
	// Arch is the model's architecture.
	Arch string
	// Input is the normalisation the run's model expects when it is not its dataset's (an
	// imported model's: see cifarlib.InputNormalization); zero otherwise.
	Input cifarlib.InputNormalization
	// ImportedFrom is the file an imported run was made from (WriteRun), or "".
	ImportedFrom string
	// Optimizer and LearningRate are GoMLX's own parameters, the optimizer's name and learning
	// rate ("" and 0: none, as an imported run has).
	Optimizer    string
	LearningRate float64
	// Step is the global step of the checkpoint read (ReadParams); Set leaves it to the
	// optimizer's counter.
	Step int
}

// Set records p in store's parameters (replacing those a checkpoint loaded), which every
// checkpoint of the store saves.
func (p Params) Set(store *model.Store) {
	root := store.RootScope()
	root.SetParams(map[string]any{paramFormat: p.Format, paramSettings: p.Settings, paramModel: p.Arch})
	if p.Optimizer != "" {
		root.SetParams(map[string]any{optimizer.ParamOptimizer: p.Optimizer, optimizer.ParamLearningRate: p.LearningRate})
	}
	if !p.Input.IsZero() {
		root.SetParams(map[string]any{paramInputMean: cifarlib.JoinStats(p.Input.Mean), paramInputStd: cifarlib.JoinStats(p.Input.Std)})
	}
	if p.ImportedFrom != "" {
		root.SetParams(map[string]any{paramImported: p.ImportedFrom})
	}
}

// ReadParams reads the parameters a checkpoint restored into store; ok is false when it holds
// no cifarlib run's (an empty folder, or a foreign checkpoint). A run without a format is of
// format 1.
func ReadParams(store *model.Store) (p Params, ok bool, err error) {
	root := store.RootScope()
	if _, found := root.GetParam(paramModel); !found {
		return p, false, nil
	}
	p = Params{Format: model.GetParamOr(root, paramFormat, 1), Settings: model.GetParamOr(root, paramSettings, ""),
		Arch: model.GetParamOr(root, paramModel, ""), ImportedFrom: model.GetParamOr(root, paramImported, ""),
		Optimizer: model.GetParamOr(root, optimizer.ParamOptimizer, ""), LearningRate: model.GetParamOr(root, optimizer.ParamLearningRate, 0.0),
		Step: int(optimizer.GetGlobalStep(store))}
	p.Input, err = readInput(root)
	return p, true, err
}

// readInput reads the input normalisation a checkpoint recorded (zero when none).
func readInput(root *model.Scope) (cifarlib.InputNormalization, error) {
	m, s := model.GetParamOr(root, paramInputMean, ""), model.GetParamOr(root, paramInputStd, "")
	if m == "" && s == "" {
		return cifarlib.InputNormalization{}, nil
	}
	mean, err1 := cifarlib.ParseStats(m)
	std, err2 := cifarlib.ParseStats(s)
	if err1 != nil || err2 != nil {
		return cifarlib.InputNormalization{}, fmt.Errorf("checkpoints: the checkpoint's input normalisation %s=%q, %s=%q: want three numbers each",
			paramInputMean, m, paramInputStd, s)
	}
	return cifarlib.InputNormalization{Mean: mean, Std: std}, nil
}
