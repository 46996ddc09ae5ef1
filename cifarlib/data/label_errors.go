package data

import (
	"fmt"
	"strings"
)

// BadLabel is one out-of-range label found by a guard.
type BadLabel struct {
	// Position is the index of the label within its batch.
	Position int
	// Example is the index of the example in its split, or -1 when unknown.
	Example int
	// Label is the offending value.
	Label int
}

func (b BadLabel) String() string {
	if b.Example >= 0 {
		return fmt.Sprintf("position %d (example %d) label %d", b.Position, b.Example, b.Label)
	}
	return fmt.Sprintf("position %d label %d", b.Position, b.Label)
}

// maxListedLabels bounds how many bad labels an error message spells out; the error
// values always carry all of them.
const maxListedLabels = 10

func ListBadLabels(bad []BadLabel, total int) string {
	parts := make([]string, 0, min(len(bad), maxListedLabels))
	for i, b := range bad {
		if i == maxListedLabels {
			break
		}
		parts = append(parts, b.String())
	}
	s := strings.Join(parts, ", ")
	if total > len(parts) {
		s += fmt.Sprintf(", ... and %d more", total-len(parts))
	}
	return s
}

// LabelRangeError is returned by the host guard (CheckLabels, Model.HostGuard) before a batch
// reaches the device: one or more labels are outside [0, NumClasses). Bad lists every
// offending label of the batch, in order of position.
type LabelRangeError struct {
	// Batch is the batch number (0-based) within the epoch, or -1 when unknown.
	Batch int
	// BatchSize is the number of labels checked.
	BatchSize int
	// NumClasses is the number of classes (the valid range is [0, NumClasses)).
	NumClasses int
	// Bad lists all out-of-range labels of the batch.
	Bad []BadLabel
}

func (e *LabelRangeError) Error() string {
	where := "batch"
	if e.Batch >= 0 {
		where = fmt.Sprintf("batch %d", e.Batch)
	}
	return fmt.Sprintf("%s: %d of %d labels out of range [0, %d): %s: labels must be class indices in [0, %d); "+
		"the labels come from a dataset with more classes than the model's head (e.g. CIFAR-100 labels for a "+
		"10-class model): build the model and the dataset from the same Spec",
		where, len(e.Bad), e.BatchSize, e.NumClasses, ListBadLabels(e.Bad, len(e.Bad)), e.NumClasses)
}

// Is makes errors.Is(err, ErrLabelOutOfRange) true.
func (e *LabelRangeError) Is(target error) bool { return target == ErrLabelOutOfRange }
