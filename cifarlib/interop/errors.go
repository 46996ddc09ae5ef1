package interop

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/internal/torchfile"
)

// Named refusals: what cannot map exactly onto a lab model is refused, never imported as a
// silently different model. errors.Is works on the *RefusalError that carries them.
var (
	// ErrStem7x7: an ImageNet ResNet stem (conv1.weight [64, 3, 7, 7], stride 2, with max-pool).
	ErrStem7x7 = errors.New("7x7 stem")
	// ErrPreAct: a pre-activation ResNet (BN-ReLU before each convolution).
	ErrPreAct = errors.New("pre-activation ResNet")
	// ErrDType: a tensor dtype that does not convert exactly to float32 (or int64 for
	// num_batches_tracked).
	ErrDType = errors.New("unhandled dtype")
	// ErrNormalization: source normalisation statistics that cannot be used (a standard
	// deviation that is not positive, metadata that does not parse).
	ErrNormalization = errors.New("unusable normalisation")
	// ErrNoStateDict: the file holds no state_dict (nor a known wrapper of one).
	ErrNoStateDict = errors.New("no state_dict")
)

// RefusalError is a named refusal: the file is a model the lab cannot reproduce exactly.
type RefusalError struct {
	// File is the file imported.
	File string
	// Kind is ErrStem7x7, ErrPreAct, ErrDType, ErrNormalization or ErrNoStateDict.
	Kind error
	// Detail names the key, shape or value and says what to do.
	Detail string
}

// Error implements error.
func (e *RefusalError) Error() string {
	return fmt.Sprintf("interop: %s: %v: %s", e.File, e.Kind, e.Detail)
}

// Unwrap returns the kind.
func (e *RefusalError) Unwrap() error { return e.Kind }

// SizeMismatch is one tensor whose shape differs from the model's.
type SizeMismatch struct {
	Key              string
	Checkpoint, Want []int
}

// LoadStateDictError is what torch's Module.load_state_dict(strict=True) raises, in its words:
// missing keys, unexpected keys, and size mismatches with both shapes.
type LoadStateDictError struct {
	// File is the file imported, Model the PyTorch class its naming is ("ResNet18", ...).
	File, Model string
	// Missing and Unexpected are keys, in the model's and the file's order (Error lists the
	// first few of each and counts the rest).
	Missing, Unexpected []string
	// Sizes lists the shape mismatches.
	Sizes []SizeMismatch
	// Hint says what to do (e.g. the --dataset whose head width matches), or "".
	Hint string
}

// Error implements error: "Error(s) in loading state_dict for ResNet18:" and one line per kind.
func (e *LoadStateDictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "interop: %s: Error(s) in loading state_dict for %s:", e.File, e.Model)
	if len(e.Missing) > 0 {
		fmt.Fprintf(&b, "\n\tMissing key(s) in state_dict: %s.", quoteKeys(e.Missing))
	}
	if len(e.Unexpected) > 0 {
		fmt.Fprintf(&b, "\n\tUnexpected key(s) in state_dict: %s.", quoteKeys(e.Unexpected))
	}
	for _, s := range e.Sizes {
		fmt.Fprintf(&b, "\n\tsize mismatch for %s: copying a param with shape torch.Size(%s) from checkpoint, "+
			"the shape in current model is torch.Size(%s).", s.Key, torchfile.ShapeString(s.Checkpoint), torchfile.ShapeString(s.Want))
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "\n%s", e.Hint)
	}
	return b.String()
}
