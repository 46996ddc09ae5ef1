package data

import (
	"fmt"
	"strings"
)

// PickleError reports a Python-layout file (a pickle) that cifarlib refuses. It names the
// file, where in it the problem is (byte offset of the pickle opcode, dict key, record) and
// the offending value.
type PickleError struct {
	// File is the file name (or the description given to readPickle).
	File string
	// Offset is the byte offset of the opcode being decoded, or -1 when the problem was found
	// after decoding (a wrong key, shape or label).
	Offset int64
	// Key is the dict key concerned ("data", "fine_labels", ...), or "".
	Key string
	// Record is the 0-based index of the offending record, or -1.
	Record int
	// Value is the offending value as text ("" when there is none to show).
	Value string
	// Reason says what is wrong and how to fix it.
	Reason string
	// Kind is one of ErrUnsafePickle, ErrPickleLayout, ErrTruncated, ErrLabelRange, ErrNoRecords.
	Kind error
}

// Error implements error: "data: FILE: at byte offset O: key K: record R: value V: REASON",
// leaving out the parts that do not apply.
func (e *PickleError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "data: %s: ", e.File)
	if e.Offset >= 0 {
		fmt.Fprintf(&b, "at byte offset %d: ", e.Offset)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "key %q: ", e.Key)
	}
	if e.Record >= 0 {
		fmt.Fprintf(&b, "record %d: ", e.Record)
	}
	if e.Value != "" {
		fmt.Fprintf(&b, "value %s: ", e.Value)
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns the kind of the error, for errors.Is.
func (e *PickleError) Unwrap() error { return e.Kind }
