package pickle

import (
	"bytes"
	"fmt"

	"github.com/nlpodyssey/gopickle/types"
)

// The only globals a CIFAR pickle may name, as gopickle's FindClass resolves them: numpy's
// ndarray reconstructor (numpy.core.multiarray before NumPy 2, numpy._core.multiarray since),
// numpy.ndarray and numpy.dtype. They are Go values that accept exactly the arguments and
// states NumPy writes for a C-ordered uint8 array; nothing is executed.

// npReconstruct is numpy.core.multiarray._reconstruct(numpy.ndarray, (0,), b'b').
type npReconstruct struct{ d *pickleDecoder }

// npNdarrayClass is numpy.ndarray, only usable as _reconstruct's first argument.
type npNdarrayClass struct{}

// npDtypeClass is numpy.dtype, callable as dtype('u1', False, True).
type npDtypeClass struct{ d *pickleDecoder }

// npDtype is a uint8 dtype.
type npDtype struct {
	d     *pickleDecoder
	built bool
}

// Array is a decoded ndarray of bytes: after BUILD, Rows, Cols and Data are set.
type Array struct {
	d     *pickleDecoder
	built bool
	// Rows and Cols are the array's shape, Data its bytes (the pixel data of a CIFAR batch).
	Rows, Cols int
	Data       []byte
}

// findClass is the gopickle FindClass hook: it allows the numpy globals and refuses any other.
func (d *pickleDecoder) findClass(module, name string) (any, error) {
	switch module + "." + name {
	case "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct":
		return npReconstruct{d}, nil
	case "numpy.ndarray":
		return npNdarrayClass{}, nil
	case "numpy.dtype":
		return npDtypeClass{d}, nil
	}
	hint := ""
	if module == "_codecs" && name == "encode" {
		hint = " (Python 3 writes bytes this way with protocol 2: re-save with protocol 4, or use the official files)"
	}
	return nil, d.lex.fail(d.o.Unsafe, module+"."+name, "global not allowed: a CIFAR pickle names only "+
		"numpy.core.multiarray._reconstruct (or numpy._core.multiarray._reconstruct), numpy.ndarray and numpy.dtype%s; "+
		"nothing of this file was executed", hint)
}

// Call implements types.Callable.
func (r npReconstruct) Call(args ...any) (any, error) {
	if len(args) != 3 {
		return nil, r.d.lex.fail(r.d.o.Layout, fmt.Sprintf("%d arguments", len(args)), "numpy _reconstruct takes (ndarray, (0,), b'b')")
	}
	if _, ok := args[0].(npNdarrayClass); !ok {
		return nil, r.d.lex.fail(r.d.o.Unsafe, ShortValue(args[0]), "numpy _reconstruct may only build a numpy.ndarray")
	}
	if t, ok := args[1].(*types.Tuple); !ok || t.Len() != 1 || t.Get(0) != 0 {
		return nil, r.d.lex.fail(r.d.o.Layout, ShortValue(args[1]), "numpy _reconstruct's shape must be (0,)")
	}
	if s, ok := PyString(args[2]); !ok || s != "b" {
		return nil, r.d.lex.fail(r.d.o.Layout, ShortValue(args[2]), "numpy _reconstruct's type code must be 'b'")
	}
	return &Array{d: r.d}, nil
}

// Call implements types.Callable: dtype('u1', False, True) (Python 2's NumPy: 0, 1).
func (c npDtypeClass) Call(args ...any) (any, error) {
	if len(args) != 3 {
		return nil, c.d.lex.fail(c.d.o.Layout, fmt.Sprintf("%d arguments", len(args)), "numpy.dtype takes ('u1', False, True)")
	}
	if s, ok := PyString(args[0]); !ok || s != "u1" {
		return nil, c.d.lex.fail(c.d.o.Layout, ShortValue(args[0]), "array dtype is not uint8 ('u1'): CIFAR pixels are bytes")
	}
	if !pyFalse(args[1]) || !pyTrue(args[2]) {
		return nil, c.d.lex.fail(c.d.o.Layout, ShortValue(args[1])+", "+ShortValue(args[2]), "numpy.dtype's flags must be (False, True)")
	}
	return &npDtype{d: c.d}, nil
}

// PySetState implements types.PyStateSettable: (3, '|', None, None, None, -1, -1, 0).
func (t *npDtype) PySetState(state any) error {
	s, ok := state.(*types.Tuple)
	if t.built || !ok || s.Len() < 3 {
		return t.d.lex.fail(t.d.o.Layout, ShortValue(state), "unexpected numpy.dtype state")
	}
	// NumPy has written versions 3 (Python 2's NumPy, and since) and 4 of this state; older
	// versions differ after the third field, which a plain uint8 leaves at None anyway.
	v, _ := s.Get(0).(int)
	order, _ := PyString(s.Get(1))
	if v < 0 || v > 4 || order != "|" || s.Get(2) != nil {
		return t.d.lex.fail(t.d.o.Layout, ShortValue(s.Get(0))+", "+ShortValue(s.Get(1)), "numpy.dtype state is not a plain uint8's (3, '|', None, ...)")
	}
	t.built = true
	return nil
}

// PySetState implements types.PyStateSettable: (1, (N, 3072), dtype, False, data).
func (a *Array) PySetState(state any) error {
	s, ok := state.(*types.Tuple)
	if a.built || !ok || s.Len() != 5 || s.Get(0) != 1 {
		return a.d.lex.fail(a.d.o.Layout, ShortValue(state), "unexpected numpy.ndarray state (want version 1, shape, dtype, order, data)")
	}
	shape, ok := s.Get(1).(*types.Tuple)
	if !ok || shape.Len() != 2 {
		return a.d.lex.fail(a.d.o.Layout, ShortValue(s.Get(1)), "array shape is not 2-D: CIFAR data is [N, 3072]")
	}
	rows, rok := shape.Get(0).(int)
	cols, cok := shape.Get(1).(int)
	if !rok || !cok || rows < 0 || rows > int(a.d.o.MaxBlob)/a.d.o.ImageBytes || cols != a.d.o.ImageBytes {
		return a.d.lex.fail(a.d.o.Layout, "("+ShortValue(shape.Get(0))+", "+ShortValue(shape.Get(1))+")",
			"array shape is not [N, %d] (N images of 3 planes of 32x32 bytes)", a.d.o.ImageBytes)
	}
	if dt, ok := s.Get(2).(*npDtype); !ok || !dt.built {
		return a.d.lex.fail(a.d.o.Layout, ShortValue(s.Get(2)), "array dtype is not a numpy uint8 dtype")
	}
	if !pyFalse(s.Get(3)) {
		return a.d.lex.fail(a.d.o.Layout, ShortValue(s.Get(3)), "array is in Fortran order: CIFAR data is C-ordered")
	}
	var data []byte
	switch v := s.Get(4).(type) {
	case []byte:
		data = v
		if bytes.Equal(v, a.d.token[:]) {
			data = a.d.lex.blob
		}
	case string:
		data = []byte(v)
	default:
		return a.d.lex.fail(a.d.o.Layout, ShortValue(v), "array data is not a byte string")
	}
	if len(data) != rows*cols {
		return a.d.lex.fail(a.d.o.Layout, fmt.Sprintf("%d bytes", len(data)), "array data does not fill its shape [%d, %d] (%d bytes)", rows, cols, rows*cols)
	}
	a.built, a.Rows, a.Cols, a.Data = true, rows, cols, data
	return nil
}

// PyString returns a Python 2 str, Python 3 str or bytes value as a Go string.
func PyString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	}
	return "", false
}

// pyFalse and pyTrue accept False/True and Python 2's NumPy 0/1.
func pyFalse(v any) bool { return v == false || v == 0 }
func pyTrue(v any) bool  { return v == true || v == 1 }

// Built reports whether the array got its shape and data (its BUILD opcode ran): an array that
// is only reconstructed is no data.
func (a *Array) Built() bool { return a.built }
