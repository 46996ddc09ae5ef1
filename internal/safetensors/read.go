package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
)

// MaxHeaderBytes bounds the JSON header, as the Python package does (100 MB).
const MaxHeaderBytes = 100_000_000

// ReadFile reads a safetensors file; see Read.
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("safetensors: %s is not a regular file", path)
	}
	return Read(f, fi.Size(), path)
}

// headerEntry is one tensor's header entry.
type headerEntry struct {
	DType       string   `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets []uint64 `json:"data_offsets"`
}

// failFunc makes a refusal of the file (an *Error of kind kind, about tensor and value).
type failFunc func(kind error, tensor, value, format string, args ...any) error

// Read decodes a safetensors file of size bytes from r; name labels errors. Refusals are
// *Error values.
func Read(r io.ReaderAt, size int64, name string) (*File, error) {
	fail := func(kind error, tensor, value, format string, args ...any) error {
		return &Error{File: name, Tensor: tensor, Value: value, Kind: kind, Reason: fmt.Sprintf(format, args...)}
	}
	var lenBuf [8]byte
	if n, _ := r.ReadAt(lenBuf[:], 0); n < 8 {
		return nil, fail(ErrTruncated, "", fmt.Sprintf("%d bytes", size), "the file ends before the 8-byte header length: copy or save it again")
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeaderBytes {
		return nil, fail(ErrHeader, "", fmt.Sprintf("header of %d bytes", n), "more than %d: not a safetensors file", MaxHeaderBytes)
	}
	if n > uint64(size-8) {
		return nil, fail(ErrTruncated, "", fmt.Sprintf("header of %d bytes", n), "the file (%d bytes) ends inside the header: copy or save it again", size)
	}
	header := make([]byte, n)
	if _, err := r.ReadAt(header, 8); err != nil {
		return nil, fail(ErrTruncated, "", "", "reading the header: %v", err)
	}
	if len(header) == 0 || header[0] != '{' {
		return nil, fail(ErrHeader, "", "", "the header is not a JSON object: not a safetensors file")
	}
	entries, names, meta, err := parseHeader(header, fail)
	if err != nil {
		return nil, err
	}
	bufLen := uint64(size) - 8 - n
	order, err := checkOffsets(entries, names, bufLen, fail)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, bufLen)
	if _, err := r.ReadAt(buf, int64(8+n)); err != nil && !(err == io.EOF && bufLen == 0) {
		return nil, fail(ErrTruncated, "", "", "reading the byte buffer: %v", err)
	}
	f := &File{Metadata: meta}
	for _, i := range order {
		e := entries[i]
		f.Tensors = append(f.Tensors, Tensor{Name: names[i], DType: e.DType, Shape: e.Shape,
			Data: buf[e.DataOffsets[0]:e.DataOffsets[1]:e.DataOffsets[1]]})
	}
	return f, nil
}

// checkOffsets orders the tensors by their data offsets and refuses offsets that overlap, leave a
// hole, leave the buffer of bufLen bytes, or do not match the tensor's dtype and shape, and a
// buffer not covered exactly.
func checkOffsets(entries []headerEntry, names []string, bufLen uint64, fail failFunc) ([]int, error) {
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ea, eb := entries[order[a]], entries[order[b]]
		return ea.DataOffsets[0] < eb.DataOffsets[0] || ea.DataOffsets[0] == eb.DataOffsets[0] && ea.DataOffsets[1] < eb.DataOffsets[1]
	})
	var at uint64
	for _, i := range order {
		e, tn := entries[i], names[i]
		begin, end := e.DataOffsets[0], e.DataOffsets[1]
		off := fmt.Sprintf("data_offsets [%d, %d]", begin, end)
		if begin != at {
			kind := "overlaps the previous tensor"
			if begin > at {
				kind = "leaves a hole after the previous tensor"
			}
			return nil, fail(ErrOffsets, tn, off, "%s (which ends at %d): the header lies about its offsets", kind, at)
		}
		if end < begin || end > bufLen {
			return nil, fail(ErrOffsets, tn, off, "outside the byte buffer of %d bytes: the header lies about its offsets, "+
				"or the file is truncated", bufLen)
		}
		want, ok := byteSize(e.Shape, DTypes[e.DType], bufLen)
		if !ok {
			return nil, fail(ErrOffsets, tn, off, "%s %v needs more than the whole buffer (%d bytes): the header lies about its offsets",
				e.DType, e.Shape, bufLen)
		}
		if want != end-begin {
			return nil, fail(ErrOffsets, tn, off, "%d bytes, but %s %v needs %d: the header lies about its offsets",
				end-begin, e.DType, e.Shape, want)
		}
		at = end
	}
	if at != bufLen {
		return nil, fail(ErrOffsets, "", fmt.Sprintf("%d bytes", bufLen-at), "bytes after the last tensor: the buffer must be "+
			"covered exactly (the Python package refuses this file too)")
	}
	return order, nil
}

// byteSize is the bytes of a shape of elements of elem bytes; false when a dimension is
// negative or the size exceeds limit.
func byteSize(shape []int, elem int, limit uint64) (uint64, bool) {
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		if d == 0 {
			return 0, true
		}
	}
	n := uint64(elem)
	for _, d := range shape {
		if n > limit/uint64(d) {
			return 0, false
		}
		n *= uint64(d)
	}
	return n, n <= limit
}

// parseHeader decodes the header object entry by entry, refusing duplicate names, unknown
// fields and dtypes, and a __metadata__ that is not an object of strings.
func parseHeader(header []byte, fail failFunc) (
	entries []headerEntry, names []string, meta map[string]string, err error) {
	dec := json.NewDecoder(bytes.NewReader(header))
	bad := func(e error) error {
		return fail(ErrHeader, "", "", "the header is not valid JSON (%v): not a safetensors file, or a corrupt one", e)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, nil, bad(err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, nil, bad(err)
		}
		key := tok.(string)
		if seen[key] {
			return nil, nil, nil, fail(ErrHeader, key, "", "the name appears twice in the header")
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, nil, bad(err)
		}
		if key == "__metadata__" {
			if err := json.Unmarshal(raw, &meta); err != nil {
				return nil, nil, nil, fail(ErrHeader, "", "__metadata__", "not an object of strings (%v)", err)
			}
			continue
		}
		var e headerEntry
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&e); err != nil {
			return nil, nil, nil, fail(ErrHeader, key, "", "entry is not {dtype, shape, data_offsets} (%v)", err)
		}
		if _, ok := DTypes[e.DType]; !ok {
			return nil, nil, nil, fail(ErrDType, key, fmt.Sprintf("dtype %q", e.DType), "not a safetensors dtype (F32, F16, BF16, F64, I64, ...)")
		}
		if len(e.DataOffsets) != 2 || e.Shape == nil || len(e.Shape) > 16 {
			return nil, nil, nil, fail(ErrHeader, key, "", "entry needs a shape (at most 16 axes) and data_offsets [BEGIN, END]")
		}
		entries, names = append(entries, e), append(names, key)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, nil, bad(err)
	}
	if rest := bytes.TrimRight(header[dec.InputOffset():], " "); len(rest) > 0 {
		return nil, nil, nil, fail(ErrHeader, "", fmt.Sprintf("%d bytes", len(rest)), "after the header's JSON object (only spaces may pad it)")
	}
	return entries, names, meta, nil
}
