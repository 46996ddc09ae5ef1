package testenv

import (
	"sort"

	"github.com/gomlx/gomlx/ml/model"
)

// SortedVariablePaths lists the variables of store by path, for deterministic test output.
func SortedVariablePaths(store *model.Store) []string {
	var paths []string
	for v := range store.IterVariables() {
		paths = append(paths, v.Path())
	}
	sort.Strings(paths)
	return paths
}
