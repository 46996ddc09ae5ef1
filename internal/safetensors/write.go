package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"

	"github.com/cifarlab/cifarlab/internal/atomicfile"
)

// Write writes tensors (in the given order) and metadata in the safetensors format. It checks
// each tensor's dtype, that its bytes match its shape, and that names are unique and not
// "__metadata__". The header is padded with spaces to a multiple of 8 bytes, as the Python
// package pads it, so that the buffer is aligned.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	header := bytes.NewBufferString("{")
	if len(metadata) > 0 {
		m, err := json.Marshal(metadata)
		if err != nil {
			return fmt.Errorf("safetensors: metadata: %w", err)
		}
		header.WriteString(`"__metadata__":`)
		header.Write(m)
	}
	seen := map[string]bool{}
	var at uint64
	for i, t := range tensors {
		elem, ok := DTypes[t.DType]
		if !ok {
			return fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		if t.Name == "__metadata__" || seen[t.Name] {
			return fmt.Errorf("safetensors: tensor %q: the name is reserved or appears twice", t.Name)
		}
		seen[t.Name] = true
		if n, ok := byteSize(t.Shape, elem, uint64(len(t.Data))); !ok || n != uint64(len(t.Data)) {
			return fmt.Errorf("safetensors: tensor %q: %d bytes of data for %s %v", t.Name, len(t.Data), t.DType, t.Shape)
		}
		e := headerEntry{DType: t.DType, Shape: t.Shape, DataOffsets: []uint64{at, at + uint64(len(t.Data))}}
		if e.Shape == nil {
			e.Shape = []int{}
		}
		b, _ := json.Marshal(e)
		name, _ := json.Marshal(t.Name)
		if i > 0 || len(metadata) > 0 {
			header.WriteByte(',')
		}
		header.Write(name)
		header.WriteByte(':')
		header.Write(b)
		at += uint64(len(t.Data))
	}
	header.WriteByte('}')
	for header.Len()%8 != 0 {
		header.WriteByte(' ')
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(header.Len()))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return err
	}
	if _, err := w.Write(header.Bytes()); err != nil {
		return err
	}
	for _, t := range tensors {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile writes a safetensors file atomically (internal/atomicfile): on error nothing is
// left behind.
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	if err := atomicfile.WriteFile(path, func(w io.Writer) error { return Write(w, tensors, metadata) }); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}
