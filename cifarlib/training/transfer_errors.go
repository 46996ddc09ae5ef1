package training

import (
	"fmt"
)

// NotRunError reports that a folder given as a trained run (Transfer.From, cifarlab
// --from) is not the checkpoint directory of a cifarlib run: it is missing, a file, empty, or
// holds a GoMLX checkpoint that cifarlib did not write. errors.Is(err, ErrNoCheckpoint) holds.
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

// Unwrap returns what opening the folder found (ErrNoCheckpoint, os.ErrNotExist, ...).
func (e *NotRunError) Unwrap() error { return e.Err }

// CorruptCheckpointError reports a checkpoint whose files are there but cannot be read back
// (a truncated or damaged .bin, a .json that does not describe it): nothing of it is used.
type CorruptCheckpointError struct {
	// Dir is the checkpoint directory.
	Dir string
	// Err is GoMLX's error reading it.
	Err error
}

// Error implements error.
func (e *CorruptCheckpointError) Error() string {
	return fmt.Sprintf("training: the checkpoint in %s is corrupt and was not used (%v): train the run again, "+
		"or delete its newest checkpoint-*.json and .bin to fall back to the previous one", e.Dir, e.Err)
}

// Unwrap returns GoMLX's error.
func (e *CorruptCheckpointError) Unwrap() error { return e.Err }

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

// ShapeMismatchError reports a plain load or a resume of a checkpoint into a model whose
// classifier head differs from the saved one, after PyTorch's load_state_dict message ("size
// mismatch for fc.weight: copying a param with shape ... from checkpoint, the shape in current
// model is ..."). cifarlib never reshapes a saved variable: the fix is a transfer, which carries
// everything but the head and initialises a new head at the target's width.
type ShapeMismatchError struct {
	// Dir is the checkpoint directory.
	Dir string
	// Variable is the variable's path, e.g. "/cnn/head/dense/weights".
	Variable string
	// Saved is its shape in the checkpoint, Model its shape in the model asked for.
	Saved, Model []int
	// SavedDataset and ModelDataset are the datasets each side was built for (Spec.ID()),
	// SavedHead and ModelHead their head widths.
	SavedDataset, ModelDataset string
	SavedHead, ModelHead       int
	// Resume is true when the load was a resume (Settings.Checkpoint.Dir).
	Resume bool
}

// Error implements error: the Problem and its fix in a Go caller's words (the transfer as
// training.Settings; cmd/cifarlab says it in flags).
func (e *ShapeMismatchError) Error() string {
	fix := fmt.Sprintf("training.Settings with Transfer.From %q and Data.Spec %s", e.Dir, specGoName(e.ModelDataset))
	if e.Resume {
		fix += ", in a new Checkpoint.Dir"
	}
	return fmt.Sprintf("%s (%s)", e.Problem(), fix)
}

// Problem is the error without its fix: the variable whose shape differs, and what a transfer
// of the run would do instead.
func (e *ShapeMismatchError) Problem() string {
	what := "loading"
	if e.Resume {
		what = "resuming"
	}
	return fmt.Sprintf("training: %s %s: size mismatch for %s: copying a variable with shape %v from checkpoint "+
		"(trained for %s, head of %d), the shape in the current model is %v (built for %s, head of %d); a saved "+
		"variable is never reshaped: transfer the run instead, which carries the backbone and initialises a new "+
		"head of %d", what, e.Dir, e.Variable, e.Saved, e.SavedDataset, e.SavedHead, e.Model, e.ModelDataset,
		e.ModelHead, e.ModelHead)
}

// specGoName is the Go expression of the Spec with the given ID.
func specGoName(id string) string {
	switch id {
	case "cifar100":
		return "data.CIFAR100(data.LabelsFine)"
	case "cifar100-coarse":
		return "data.CIFAR100(data.LabelsCoarse)"
	}
	return "data.CIFAR10()"
}

// datasetSettings names the dataset with the given Spec ID by its settings: "dataset=cifar100
// labels=coarse".
func datasetSettings(id string) string {
	if id == "cifar100-coarse" {
		return "dataset=cifar100 labels=coarse"
	}
	return "dataset=" + id
}
