package torchfile

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"
)

// DType is a tensor's element type, in PyTorch's words ("float32", "int64", ...).
type DType string

// The dtypes a storage may have.
const (
	Float32  DType = "float32"
	Float64  DType = "float64"
	Float16  DType = "float16"
	BFloat16 DType = "bfloat16"
	Int64    DType = "int64"
	Int32    DType = "int32"
	Int16    DType = "int16"
	Int8     DType = "int8"
	Uint8    DType = "uint8"
	Bool     DType = "bool"
)

// storageTypes maps torch's typed storage classes (as torch.save names them) to their dtype.
var storageTypes = map[string]DType{
	"FloatStorage": Float32, "DoubleStorage": Float64, "HalfStorage": Float16, "BFloat16Storage": BFloat16,
	"LongStorage": Int64, "IntStorage": Int32, "ShortStorage": Int16, "CharStorage": Int8,
	"ByteStorage": Uint8, "BoolStorage": Bool,
}

// Size returns the bytes of one element.
func (d DType) Size() int {
	switch d {
	case Float64, Int64:
		return 8
	case Float32, Int32:
		return 4
	case Float16, BFloat16, Int16:
		return 2
	}
	return 1
}

// IsFloat reports whether d is a floating-point dtype.
func (d DType) IsFloat() bool { return d == Float32 || d == Float64 || d == Float16 || d == BFloat16 }

// Storage is one storage of the file: the bytes of zip entry data/KEY, little-endian.
type Storage struct {
	// Key is the storage's key (its entry is PREFIX/data/KEY).
	Key string
	// DType is the element type and Numel the number of elements.
	DType DType
	Numel int
	// Data holds Numel elements.
	Data []byte
}

// Tensor is a strided view of a Storage, as torch._utils._rebuild_tensor_v2 builds it. Read
// checks that every element of the view lies inside the storage.
type Tensor struct {
	// DType is the storage's dtype.
	DType DType
	// Shape is the tensor's size (empty for a scalar).
	Shape []int
	// Offset is the storage offset and Strides the stride of each axis, in elements.
	Offset  int
	Strides []int
	// Storage holds the elements.
	Storage *Storage
}

// Numel returns the number of elements of the tensor.
func (t *Tensor) Numel() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// String describes the tensor as PyTorch prints its type and size: "float32[64, 3, 3, 3]".
func (t *Tensor) String() string { return fmt.Sprintf("%s%v", t.DType, shapeString(t.Shape)) }

// shapeString formats a shape as torch.Size does: [64, 3, 3, 3].
func shapeString(shape []int) string {
	s := "["
	for i, d := range shape {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(d)
	}
	return s + "]"
}

// ShapeString formats a shape as torch.Size prints it: "[64, 3, 3, 3]".
func ShapeString(shape []int) string { return shapeString(shape) }

// eachIndex calls f with the storage index of every element, in row-major (C) order.
func (t *Tensor) eachIndex(f func(i, at int)) {
	n := t.Numel()
	if n == 0 {
		return
	}
	idx := make([]int, len(t.Shape))
	at := t.Offset
	for i := range n {
		f(i, at)
		for ax := len(idx) - 1; ax >= 0; ax-- {
			idx[ax]++
			at += t.Strides[ax]
			if idx[ax] < t.Shape[ax] {
				break
			}
			at -= idx[ax] * t.Strides[ax]
			idx[ax] = 0
		}
	}
}

// Float32 returns the elements in row-major order as float32 (float64 values are rounded to
// the nearest float32). Integer and bool tensors are refused.
func (t *Tensor) Float32() ([]float32, error) {
	if !t.DType.IsFloat() {
		return nil, fmt.Errorf("torchfile: tensor %s is not floating point", t)
	}
	out := make([]float32, t.Numel())
	d := t.Storage.Data
	t.eachIndex(func(i, at int) {
		switch t.DType {
		case Float32:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(d[4*at:]))
		case Float64:
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(d[8*at:])))
		case Float16:
			out[i] = float16.Float16(binary.LittleEndian.Uint16(d[2*at:])).Float32()
		case BFloat16:
			out[i] = bfloat16.FromBits(binary.LittleEndian.Uint16(d[2*at:])).Float32()
		}
	})
	return out, nil
}

// Int64 returns the elements in row-major order as int64. Floating-point tensors are refused.
func (t *Tensor) Int64() ([]int64, error) {
	if t.DType.IsFloat() {
		return nil, fmt.Errorf("torchfile: tensor %s is not an integer tensor", t)
	}
	out := make([]int64, t.Numel())
	d := t.Storage.Data
	t.eachIndex(func(i, at int) {
		switch t.DType {
		case Int64:
			out[i] = int64(binary.LittleEndian.Uint64(d[8*at:]))
		case Int32:
			out[i] = int64(int32(binary.LittleEndian.Uint32(d[4*at:])))
		case Int16:
			out[i] = int64(int16(binary.LittleEndian.Uint16(d[2*at:])))
		case Int8:
			out[i] = int64(int8(d[at]))
		case Uint8, Bool:
			out[i] = int64(d[at])
		}
	})
	return out, nil
}

// checkView validates a view against its storage: non-negative sizes, strides and offset,
// no more elements than the storage holds (so that materialising a view never allocates
// more than the file's bytes), and every element inside the storage. It returns "" or the
// problem.
func checkView(shape, strides []int, offset int, st *Storage) string {
	if len(shape) != len(strides) {
		return fmt.Sprintf("size %s and stride %s have different lengths", shapeString(shape), shapeString(strides))
	}
	n := 1
	for i, d := range shape {
		if d < 0 || strides[i] < 0 || offset < 0 {
			return fmt.Sprintf("negative size, stride or offset (size %s, stride %s, offset %d)", shapeString(shape), shapeString(strides), offset)
		}
		if d == 0 {
			n = 0
		} else if n > 0 && n > st.Numel/d {
			return fmt.Sprintf("size %s has more elements than its storage (%d)", shapeString(shape), st.Numel)
		} else {
			n *= d
		}
	}
	if n == 0 {
		return ""
	}
	if offset >= st.Numel {
		return fmt.Sprintf("storage offset %d is outside the storage of %d elements", offset, st.Numel)
	}
	last := offset
	for i, d := range shape {
		if d > 1 && strides[i] > (st.Numel-1-last)/(d-1) {
			return fmt.Sprintf("storage offset %d with size %s and stride %s overruns the storage of %d elements",
				offset, shapeString(shape), shapeString(strides), st.Numel)
		}
		last += (d - 1) * strides[i]
	}
	return ""
}
