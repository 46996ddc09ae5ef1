package training

import (
	"fmt"
)

// NotRunError reports that a folder given as a trained run (Transfer.From, cifarlab
// --from) is not the checkpoint directory of a cifarlib run: it is missing, a file, empty, or
// holds a GoMLX checkpoint that cifarlib did not write. errors.Is(err, checkpoints.ErrNoCheckpoint) holds.
type NotRunError struct {
	// Dir is the folder given.
	Dir string
	// Err is what opening it found.
	Err error
}

// Error implements error.
func (e *NotRunError) Error() string {
	return fmt.Sprintf("training: %s is not a trained cifarlib run (%v): give the checkpoint folder of a run "+
		"(Settings.Checkpoint.Dir of a run of cifarlab train or of a notebook's lab.Fit)", e.Dir, e.Err)
}

// Unwrap returns what opening the folder found (checkpoints.ErrNoCheckpoint, os.ErrNotExist, ...).
func (e *NotRunError) Unwrap() error { return e.Err }

// ArchMismatchError reports a transfer from a run of another architecture: its variables can
// not be carried into the requested model.
type ArchMismatchError struct {
	// Dir is the source run; Saved its architecture and Requested the one asked for.
	Dir, Saved, Requested string
}

// Error implements error: the Problem and its fix in a Go caller's words (training.Settings'
// fields; cmd/cifarlab says it in flags).
func (e *ArchMismatchError) Error() string {
	return fmt.Sprintf("%s; use Model.Arch %q, or training.ArchOfSource with Transfer.From", e.Problem(), e.Saved)
}

// Problem is the error without its fix: what was asked of which run.
func (e *ArchMismatchError) Problem() string {
	return fmt.Sprintf("training: run %s is a %s, but the model asked for is a %s: the backbone can only be carried "+
		"into the same architecture", e.Dir, e.Saved, e.Requested)
}

// datasetSettings names the dataset with the given Spec ID by its settings: "dataset=cifar100
// labels=coarse".
func datasetSettings(id string) string {
	if id == "cifar100-coarse" {
		return "dataset=cifar100 labels=coarse"
	}
	return "dataset=" + id
}
