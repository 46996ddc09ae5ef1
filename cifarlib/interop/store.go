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
