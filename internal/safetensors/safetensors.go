// Package safetensors reads and writes the safetensors format (huggingface/safetensors): an
// 8-byte little-endian header length N, N bytes of JSON header ({"NAME": {"dtype": "F32",
// "shape": [...], "data_offsets": [BEGIN, END]}, ..., "__metadata__": {"k": "v"}}), then the
// byte buffer, every tensor little-endian and C-ordered at its offsets.
//
// Read validates what the format promises before it trusts anything: the header length and
// the offsets lie inside the file, each tensor's offsets span exactly its shape's bytes, the
// tensors neither overlap nor leave holes and cover the whole buffer (as the Python package
// requires, which rules out polyglot files), no name appears twice, dtypes are known. Every
// allocation is bounded by the file's bytes. Write produces files the Python package reads
// (safetensors.torch.load_file), atomically when written to a path.
package safetensors

import (
	"errors"
	"fmt"
	"strings"
)

// Kinds of error, for errors.Is on an *Error.
var (
	// ErrHeader: the header is not a valid safetensors header (length, JSON, fields).
	ErrHeader = errors.New("invalid safetensors header")
	// ErrOffsets: the header's data_offsets lie about the buffer: outside it, overlapping,
	// leaving holes, or not matching a tensor's shape and dtype.
	ErrOffsets = errors.New("invalid safetensors offsets")
	// ErrTruncated: the file ends before its header or buffer does.
	ErrTruncated = errors.New("truncated safetensors file")
	// ErrDType: a dtype the format does not define.
	ErrDType = errors.New("unknown safetensors dtype")
)

// Error reports a safetensors file that is refused, naming the file, the tensor and the
// offending value.
type Error struct {
	// File is the file name given to Read.
	File string
	// Tensor is the tensor concerned, or "".
	Tensor string
	// Value is the offending value as text, or "".
	Value string
	// Reason says what is wrong and what to do.
	Reason string
	// Kind is ErrHeader, ErrOffsets, ErrTruncated or ErrDType.
	Kind error
}

// Error implements error: "safetensors: FILE: tensor T: value V: REASON".
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "safetensors: %s: ", e.File)
	if e.Tensor != "" {
		fmt.Fprintf(&b, "tensor %q: ", e.Tensor)
	}
	if e.Value != "" {
		fmt.Fprintf(&b, "%s: ", e.Value)
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns the kind, for errors.Is.
func (e *Error) Unwrap() error { return e.Kind }

// DTypes maps each dtype name of the format to its element size in bytes.
var DTypes = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8,
}

// Tensor is one tensor: its dtype name ("F32", "I64", ...), its shape and its bytes
// (little-endian, C order).
type Tensor struct {
	Name  string
	DType string
	Shape []int
	Data  []byte
}

// File is a decoded safetensors file.
type File struct {
	// Tensors in the order of their offsets.
	Tensors []Tensor
	// Metadata is the header's __metadata__ (nil when absent).
	Metadata map[string]string
}

// Get returns the tensor of a name.
func (f *File) Get(name string) (Tensor, bool) {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}
