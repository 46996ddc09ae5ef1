package pickle

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// npParts are the pieces of a protocol-2 pickle of a uint8 ndarray as NumPy writes it; the
// defaults make a [2, 4] array (Options.ImageBytes 4).
type npParts struct {
	recon, rargs, dtype, version, shape, order, data string
}

func npDefault() npParts {
	return npParts{
		recon:   "cnumpy.core.multiarray\n_reconstruct\n",
		rargs:   "cnumpy\nndarray\nK\x00\x85C\x01b\x87",
		dtype:   "cnumpy\ndtype\n\x8c\x02u1\x89\x88\x87R(K\x03\x8c\x01|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb",
		version: "K\x01", shape: "K\x02K\x04\x86", order: "\x89", data: "C\x08abcdefgh",
	}
}

func (n npParts) pickle() []byte {
	return p("\x80\x02", n.recon, n.rargs, "R(", n.version, n.shape, n.dtype, n.order, n.data, "tb.")
}

// small is the Options of these tests: rows of 4 bytes.
func small(o *Options) { o.ImageBytes = 4 }

// TestNumpyRefusals: every refusal of the NumPy stand-ins, by name: other globals, and each
// argument and state NumPy would not write for a C-ordered uint8 [N, ImageBytes] array.
func TestNumpyRefusals(t *testing.T) {
	edit := func(f func(*npParts)) []byte {
		n := npDefault()
		f(&n)
		return n.pickle()
	}
	for _, tc := range []struct {
		name   string
		data   []byte
		kind   error
		value  string
		reason string
	}{
		{"_codecs.encode", edit(func(n *npParts) { n.recon = "c_codecs\nencode\n" }), errUnsafe, "_codecs.encode",
			"(Python 3 writes bytes this way with protocol 2: re-save with protocol 4, or use the official files)"},
		{"another global", edit(func(n *npParts) { n.recon = "cbuiltins\neval\n" }), errUnsafe, "builtins.eval",
			"global not allowed: a CIFAR pickle names only numpy.core.multiarray._reconstruct"},
		{"_reconstruct with 2 arguments", edit(func(n *npParts) { n.rargs = "cnumpy\nndarray\nK\x00\x85\x86" }), errLayout, "2 arguments",
			"numpy _reconstruct takes (ndarray, (0,), b'b')"},
		{"_reconstruct of another class", edit(func(n *npParts) { n.rargs = "K\x01K\x00\x85C\x01b\x87" }), errUnsafe, "1",
			"numpy _reconstruct may only build a numpy.ndarray"},
		{"_reconstruct's shape", edit(func(n *npParts) { n.rargs = "cnumpy\nndarray\nK\x01\x85C\x01b\x87" }), errLayout, "(1)",
			"numpy _reconstruct's shape must be (0,)"},
		{"_reconstruct's type code", edit(func(n *npParts) { n.rargs = "cnumpy\nndarray\nK\x00\x85C\x01c\x87" }), errLayout, `b"c"`,
			"numpy _reconstruct's type code must be 'b'"},
		{"dtype with 2 arguments", edit(func(n *npParts) { n.dtype = "cnumpy\ndtype\n\x8c\x02u1\x89\x86R" }), errLayout, "2 arguments",
			"numpy.dtype takes ('u1', False, True)"},
		{"dtype float32", edit(func(n *npParts) { n.dtype = "cnumpy\ndtype\n\x8c\x02f4\x89\x88\x87R" }), errLayout, `"f4"`,
			"array dtype is not uint8 ('u1'): CIFAR pixels are bytes"},
		{"dtype flags", edit(func(n *npParts) { n.dtype = "cnumpy\ndtype\n\x8c\x02u1\x88\x88\x87R" }), errLayout, "true, true",
			"numpy.dtype's flags must be (False, True)"},
		{"dtype state too short", edit(func(n *npParts) { n.dtype = "cnumpy\ndtype\n\x8c\x02u1\x89\x88\x87R(K\x03tb" }), errLayout, "(3)",
			"unexpected numpy.dtype state"},
		{"dtype state big-endian", edit(func(n *npParts) {
			n.dtype = "cnumpy\ndtype\n\x8c\x02u1\x89\x88\x87R(K\x03\x8c\x01>NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb"
		}), errLayout, `3, ">"`, "numpy.dtype state is not a plain uint8's"},
		{"ndarray state version 2", edit(func(n *npParts) { n.version = "K\x02" }), errLayout, "", "unexpected numpy.ndarray state"},
		{"1-D array", edit(func(n *npParts) { n.shape = "K\x08\x85" }), errLayout, "(8)", "array shape is not 2-D: CIFAR data is [N, 3072]"},
		{"rows of another width", edit(func(n *npParts) { n.shape = "K\x02K\x05\x86" }), errLayout, "(2, 5)", "array shape is not [N, 4]"},
		{"more rows than MaxBlob holds", edit(func(n *npParts) { n.shape = "M\xe3\x04K\x04\x86" }), errLayout, "(1251, 4)", "array shape is not [N, 4]"},
		{"negative rows", edit(func(n *npParts) { n.shape = "J\xff\xff\xff\xffK\x04\x86" }), errLayout, "(-1, 4)", "array shape is not [N, 4]"},
		{"not a dtype", edit(func(n *npParts) { n.dtype = "N" }), errLayout, "None", "array dtype is not a numpy uint8 dtype"},
		{"Fortran order", edit(func(n *npParts) { n.order = "\x88" }), errLayout, "true", "array is in Fortran order: CIFAR data is C-ordered"},
		{"data not bytes", edit(func(n *npParts) { n.data = "K\x01" }), errLayout, "1", "array data is not a byte string"},
		{"data short of the shape", edit(func(n *npParts) { n.data = "C\x07abcdefg" }), errLayout, "7 bytes",
			"array data does not fill its shape [2, 4] (8 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decodeTest(tc.data, small)
			require.ErrorIs(t, err, tc.kind)
			var f *failure
			require.ErrorAs(t, err, &f)
			if tc.value != "" {
				require.Equal(t, tc.value, f.value)
			}
			require.Contains(t, f.reason, tc.reason)
		})
	}
}

// TestNumpyAccepted: what NumPy writes decodes, at the bounds too: NumPy 2's module name,
// Python 2's str data, no rows, and rows up to MaxBlob / ImageBytes (the data read into Alloc's
// buffer).
func TestNumpyAccepted(t *testing.T) {
	n := npDefault()
	for _, tc := range []struct {
		name string
		edit func(*npParts)
		rows int
	}{
		{"NumPy 1", func(*npParts) {}, 2},
		{"NumPy 2's module", func(n *npParts) { n.recon = "cnumpy._core.multiarray\n_reconstruct\n" }, 2},
		{"Python 2 str data", func(n *npParts) { n.data = "U\x08abcdefgh" }, 2},
		{"no rows", func(n *npParts) { n.shape, n.data = "K\x00K\x04\x86", "C\x00" }, 0},
		{"MaxBlob / ImageBytes rows", func(n *npParts) { n.shape, n.data = "M\xe2\x04K\x04\x86", string(blob(5000)) }, 1250},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := n
			tc.edit(&parts)
			v, _, err := decodeTest(parts.pickle(), small)
			require.NoError(t, err)
			a, ok := v.(*Array)
			require.True(t, ok, "%T", v)
			require.True(t, a.Built())
			require.Equal(t, tc.rows, a.Rows)
			require.Equal(t, 4, a.Cols)
			require.Len(t, a.Data, 4*tc.rows)
		})
	}
}
