package interop

import (
	"fmt"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// newStore returns a GoMLX store holding the variables (float32, at their paths).
func newStore(vars []Variable) (*model.Store, error) {
	store := model.NewStore()
	for _, v := range vars {
		if _, err := store.CreateVariable(v.Path, tensors.FromFlatDataAndDimensions(v.Values, v.Shape...)); err != nil {
			return nil, fmt.Errorf("interop: variable %s: %w", v.Path, err)
		}
	}
	return store, nil
}

// paramNames is the store parameter under which an imported run records the PyTorch naming of
// its source, so that Export writes the source's names back by default.
const paramNames = "cifarlab_torch_names"

// setSourceNames records the source's naming in the imported run's store.
func setSourceNames(store *model.Store, names Names) {
	store.RootScope().SetParams(map[string]any{paramNames: string(names)})
}

// sourceNames is the naming an imported run recorded, or "" (a run the lab trained).
func sourceNames(store *model.Store) Names {
	return Names(model.GetParamOr(store.RootScope(), paramNames, ""))
}
