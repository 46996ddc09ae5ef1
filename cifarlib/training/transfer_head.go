package training

import (
	"fmt"
	"strings"
)

// keepHead carries the source's head with the backbone when the target has the source's
// number of classes (fine-tuning a model on its own task, or on another dataset of the same
// width) and Transfer.NewHead is false: the report's Reinitialized variables become KeptHead, with
// the source's shapes. A different width, or NewHead, leaves them re-initialised from the seed.
func (tt *trainTransfer) keepHead(p *plan) {
	r := tt.report
	if r == nil || p.Transfer.NewHead || p.Model.Head != r.FromHead || len(r.Reinitialized) == 0 {
		return
	}
	for _, v := range r.Reinitialized {
		r.KeptHead = append(r.KeptHead, TransferVariable{Path: v.Path, Shape: v.FromShape})
	}
	r.Reinitialized = nil
}

// keptHeadLine is the report's line for a carried head.
func (r *TransferReport) keptHeadLine() string {
	paths := make([]string, len(r.KeptHead))
	for i, v := range r.KeptHead {
		paths[i] = fmt.Sprintf("%s %v", v.Path, v.Shape)
	}
	return fmt.Sprintf("  head kept, carried bit for bit: %s: %s has the source's %d classes (NewHead, the setting new-head, "+
		"re-initialises it from the seed)\n", strings.Join(paths, ", "), r.Dataset, r.Head)
}
