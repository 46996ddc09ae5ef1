package training

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// ownNormalizationItem rewrites the checklist's normalisation item for a run that records its
// own input normalisation (an imported model's): its model re-normalises whatever dataset it
// sees to those statistics, so the target's differ from nothing the weights see.
func ownNormalizationItem(items []cifarlib.CheckItem, own cifarlib.InputNormalization, target data.Spec) {
	if own.IsZero() {
		return
	}
	for i := range items {
		if items[i].Item == "normalisation" {
			items[i] = cifarlib.CheckItem{Item: "normalisation", Status: cifarlib.CheckOK, Detail: fmt.Sprintf("the run applies its "+
				"own %v at its input: %s's images, normalised with its statistics (mean %v, std %v), are re-normalised to it",
				own, target.ID(), target.Mean, target.Std)}
		}
	}
}
