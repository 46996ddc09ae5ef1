package checkpoints

import (
	"errors"
	"fmt"
)

// ErrNoCheckpoint is returned (wrapped) when a folder holds no checkpoint to load.
var ErrNoCheckpoint = errors.New("checkpoints: no checkpoint")

// CorruptError reports a checkpoint whose files are there but cannot be read back (a truncated
// or damaged .bin, a .json that does not describe it): nothing of it is used.
type CorruptError struct {
	// Dir is the checkpoint folder.
	Dir string
	// Err is GoMLX's error reading it.
	Err error
}

// Error implements error.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("checkpoints: the checkpoint in %s is corrupt and was not used (%v): train the run again, "+
		"or delete its newest checkpoint-*.json and .bin to fall back to the previous one", e.Dir, e.Err)
}

// Unwrap returns GoMLX's error.
func (e *CorruptError) Unwrap() error { return e.Err }

// IncompleteError reports that the newest checkpoint in a folder was not completely written
// (GoMLX's checkpoint.Save writes its files in place, and a crash or kill during a save leaves an
// empty or truncated .json): loading it would fail, and resuming from it is impossible.
type IncompleteError struct {
	// Dir is the checkpoint folder.
	Dir string
	// Files are the base names (without .json/.bin) of the incomplete checkpoints, newest last.
	Files []string
	// Reason says what is wrong with the newest one.
	Reason string
}

// Error implements error.
func (e *IncompleteError) Error() string {
	return fmt.Sprintf("checkpoints: checkpoint %s in %s is incomplete (%s; a save was interrupted): resume "+
		"training with the same checkpoint folder to set it aside and continue from the previous one, "+
		"or delete its .json and .bin files", e.Files[len(e.Files)-1], e.Dir, e.Reason)
}

// ShapeMismatchError reports a plain load or a resume of a checkpoint into a model whose
// classifier head differs from the saved one, after PyTorch's load_state_dict message ("size
// mismatch for fc.weight: copying a param with shape ... from checkpoint, the shape in current
// model is ..."). cifarlib never reshapes a saved variable: the fix is a transfer, which carries
// everything but the head and initialises a new head at the target's width.
type ShapeMismatchError struct {
	// Dir is the checkpoint folder.
	Dir string
	// Variable is the variable's path, e.g. "/cnn/head/dense/weights".
	Variable string
	// Saved is its shape in the checkpoint, Model its shape in the model asked for.
	Saved, Model []int
	// SavedDataset and ModelDataset are the datasets each side was built for (Spec.ID()),
	// SavedHead and ModelHead their head widths.
	SavedDataset, ModelDataset string
	SavedHead, ModelHead       int
	// Resume is true when the load was a resume (training.Settings.Checkpoint.Dir).
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
	return fmt.Sprintf("checkpoints: %s %s: size mismatch for %s: copying a variable with shape %v from checkpoint "+
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
