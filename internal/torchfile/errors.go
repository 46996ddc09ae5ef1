package torchfile

import (
	"errors"
	"fmt"
	"strings"
)

// Kinds of error, for errors.Is on an *Error.
var (
	// ErrUnsafe: the pickle names a global outside the tensor rebuild functions and storage
	// types, or uses an opcode that builds arbitrary objects: torch.load(..., weights_only=True)
	// refuses such a file too. Nothing of it is executed.
	ErrUnsafe = errors.New("unsafe pickle")
	// ErrFormat: the file is not a state_dict saved by torch.save in the zip format (torch >= 1.6),
	// or its tensors are inconsistent (strides or an offset overrunning their storage, a storage
	// declaring more elements than its entry holds, ...).
	ErrFormat = errors.New("not a PyTorch zip checkpoint")
	// ErrTruncated: the file ends early (a truncated zip, or a pickle cut short).
	ErrTruncated = errors.New("truncated file")
	// ErrDType: a storage of a dtype this reader does not handle (complex, quantized, float8).
	ErrDType = errors.New("unhandled dtype")
)

// Error reports a PyTorch file that is refused. It names the file, the zip entry, the byte
// offset inside the pickle when known, the offending value and what to do.
type Error struct {
	// File is the file name given to Read.
	File string
	// Entry is the zip entry concerned ("archive/data.pkl", "archive/data/3"), or "".
	Entry string
	// Offset is the byte offset of the pickle opcode in Entry, or -1.
	Offset int64
	// Value is the offending value as text, or "".
	Value string
	// Reason says what is wrong and how to fix it.
	Reason string
	// Kind is ErrUnsafe, ErrFormat, ErrTruncated or ErrDType.
	Kind error
}

// Error implements error: "torchfile: FILE: entry E: at byte offset O: value V: REASON".
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "torchfile: %s: ", e.File)
	if e.Entry != "" {
		fmt.Fprintf(&b, "entry %s: ", e.Entry)
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, "at byte offset %d: ", e.Offset)
	}
	if e.Value != "" {
		fmt.Fprintf(&b, "%s: ", e.Value)
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns the kind, for errors.Is.
func (e *Error) Unwrap() error { return e.Kind }
