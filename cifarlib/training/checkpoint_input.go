package training

import (
	"fmt"

	"github.com/gomlx/gomlx/ml/model"

	"github.com/cifarlab/cifarlab/cifarlib"
)

// Store parameters of a run whose model expects its own input normalisation (an imported
// model's, see cifarlib.InputNormalization), as "a,b,c"; absent for a run that uses its
// dataset's statistics, as every run did before they existed.
const (
	ckptParamInputMean = "cifarlab_input_mean"
	ckptParamInputStd  = "cifarlab_input_std"
	// ckptParamImported is the file an imported run was made from (WriteImportedRun).
	ckptParamImported = "cifarlab_imported_from"
)

// setInputParams records the run's input normalisation (none when n is zero).
func setInputParams(store *model.Store, n cifarlib.InputNormalization) {
	if n.IsZero() {
		return
	}
	store.RootScope().SetParams(map[string]any{ckptParamInputMean: cifarlib.JoinStats(n.Mean), ckptParamInputStd: cifarlib.JoinStats(n.Std)})
}

// inputFromStore reads the input normalisation a checkpoint recorded (zero when none).
func inputFromStore(store *model.Store) (cifarlib.InputNormalization, error) {
	root := store.RootScope()
	m, s := model.GetParamOr(root, ckptParamInputMean, ""), model.GetParamOr(root, ckptParamInputStd, "")
	if m == "" && s == "" {
		return cifarlib.InputNormalization{}, nil
	}
	mean, err1 := cifarlib.ParseStats(m)
	std, err2 := cifarlib.ParseStats(s)
	if err1 != nil || err2 != nil {
		return cifarlib.InputNormalization{}, fmt.Errorf("training: the checkpoint's input normalisation %s=%q, %s=%q: want three numbers each",
			ckptParamInputMean, m, ckptParamInputStd, s)
	}
	return cifarlib.InputNormalization{Mean: mean, Std: std}, nil
}
