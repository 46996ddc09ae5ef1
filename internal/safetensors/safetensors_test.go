package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/testenv"
	"github.com/stretchr/testify/require"
)

// expected is testdata/expected.json: each tensor's shape and values (as float64).
type expected map[string]struct {
	Shape  []int     `json:"shape"`
	Values []float64 `json:"values"`
}

func readExpected(t *testing.T, path string) expected {
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var e expected
	require.NoError(t, json.Unmarshal(raw, &e))
	return e
}

// values decodes a tensor's little-endian elements as float64 (exact for every dtype used).
func values(t *testing.T, tensor Tensor) []float64 {
	elem := DTypes[tensor.DType]
	out := make([]float64, len(tensor.Data)/elem)
	for i := range out {
		b := tensor.Data[i*elem:]
		switch tensor.DType {
		case "F32":
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		case "F64":
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b))
		case "F16":
			out[i] = float64(f16(binary.LittleEndian.Uint16(b)))
		case "I64":
			out[i] = float64(int64(binary.LittleEndian.Uint64(b)))
		case "BOOL":
			out[i] = float64(b[0])
		default:
			t.Fatalf("dtype %s", tensor.DType)
		}
	}
	return out
}

// f16 decodes an IEEE half (normal and zero values only, enough for the fixture).
func f16(h uint16) float32 {
	if h&0x7fff == 0 {
		return 0
	}
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10&0x1f) - 15 + 127
	return math.Float32frombits(sign | exp<<23 | uint32(h&0x3ff)<<13)
}

// TestReadPythonWritten reads the file the Python package wrote (testdata/make_fixtures.py).
func TestReadPythonWritten(t *testing.T) {
	f, err := ReadFile(filepath.Join("testdata", "python.safetensors"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"format": "pt", "source": "make_fixtures.py"}, f.Metadata)
	want := readExpected(t, filepath.Join("testdata", "expected.json"))
	require.Len(t, f.Tensors, len(want))
	for name, w := range want {
		tensor, ok := f.Get(name)
		require.True(t, ok, name)
		require.Equal(t, w.Shape, tensor.Shape, name)
		require.Equal(t, w.Values, values(t, tensor), name)
	}
	nbt, _ := f.Get("bn.num_batches_tracked")
	require.Equal(t, "I64", nbt.DType)
	require.Equal(t, []int{}, nbt.Shape)
}

// TestWriteReadBack writes the Python file's tensors with Write and reads them back: the same
// tensors, and the same bytes as the Python package wrote when the order and padding agree.
func TestWriteReadBack(t *testing.T) {
	f, err := ReadFile(filepath.Join("testdata", "python.safetensors"))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "go.safetensors")
	require.NoError(t, WriteFile(path, f.Tensors, f.Metadata))
	back, err := ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, f, back)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Zero(t, binary.LittleEndian.Uint64(raw)%8, "header padded to 8 bytes")

	require.ErrorContains(t, WriteFile(path, []Tensor{{Name: "x", DType: "F32", Shape: []int{2}, Data: make([]byte, 4)}}, nil),
		"4 bytes of data for F32 [2]")
	require.ErrorContains(t, WriteFile(path, []Tensor{{Name: "x", DType: "Q4", Shape: []int{}, Data: nil}}, nil), "unknown dtype")
	again, err := ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, f, again, "a failed write leaves the file as it was")
}

// TestPythonReadsGoWritten has the real safetensors package (kernel/requirements-test.txt)
// read the Go writer's file and write one the Go reader reads.
func TestPythonReadsGoWritten(t *testing.T) {
	python := testenv.Python(t, "numpy", "safetensors")
	dir := t.TempDir()
	f, err := ReadFile(filepath.Join("testdata", "python.safetensors"))
	require.NoError(t, err)
	goFile := filepath.Join(dir, "go.safetensors")
	require.NoError(t, WriteFile(goFile, f.Tensors, map[string]string{"format": "pt"}))
	script := `
import json, sys
import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file
t = load_file(sys.argv[1])
with safe_open(sys.argv[1], "np") as f:
    meta = f.metadata()
json.dump({"meta": meta, "tensors": {k: {"shape": list(v.shape), "values": v.reshape(-1).astype(np.float64).tolist()} for k, v in t.items()}}, sys.stdout)
save_file({"w": np.arange(6, dtype=np.float32).reshape(2, 3), "n": np.array(7, dtype=np.int64)}, sys.argv[2])
`
	pyFile := filepath.Join(dir, "py.safetensors")
	out, err := exec.Command(python, "-c", script, goFile, pyFile).Output()
	require.NoError(t, err)
	var got struct {
		Meta    map[string]string `json:"meta"`
		Tensors expected          `json:"tensors"`
	}
	require.NoError(t, json.Unmarshal(out, &got))
	require.Equal(t, map[string]string{"format": "pt"}, got.Meta)
	require.Equal(t, readExpected(t, filepath.Join("testdata", "expected.json")), got.Tensors)

	py, err := ReadFile(pyFile)
	require.NoError(t, err)
	w, _ := py.Get("w")
	require.Equal(t, []float64{0, 1, 2, 3, 4, 5}, values(t, w))
	n, _ := py.Get("n")
	require.Equal(t, []float64{7}, values(t, n))
}

// craft builds a file from a header and a buffer.
func craft(header string, buf []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	b.Write(buf)
	return b.Bytes()
}

// TestReadRefuses: headers that lie, and truncated files, are refused by name; nothing is
// allocated beyond the file.
func TestReadRefuses(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "python.safetensors"))
	require.NoError(t, err)
	buf8 := make([]byte, 8)
	for _, tc := range []struct {
		name string
		data []byte
		kind error
		want string
	}{
		{"overlap", craft(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, buf8),
			ErrOffsets, `tensor "b": data_offsets [4, 8]: overlaps the previous tensor`},
		{"hole", craft(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, buf8), ErrOffsets, "leaves a hole"},
		{"outside", craft(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, buf8), ErrOffsets, "outside the byte buffer of 8 bytes"},
		{"shape lies", craft(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}}`, buf8), ErrOffsets, "8 bytes, but F32 [1] needs 4"},
		{"shape beyond buffer", craft(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, buf8), ErrOffsets, "F32 [3] needs more than the whole buffer"},
		{"huge shape", craft(`{"a":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,8]}}`, buf8), ErrOffsets, "the header lies"},
		{"trailing bytes", craft(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, buf8), ErrOffsets, "bytes after the last tensor"},
		{"begin after end", craft(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"U8","shape":[8],"data_offsets":[8,0]}}`, buf8),
			ErrOffsets, "leaves a hole"},
		{"duplicate", craft(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}}`, buf8),
			ErrHeader, "appears twice"},
		{"dtype", craft(`{"a":{"dtype":"Q4","shape":[8],"data_offsets":[0,8]}}`, buf8), ErrDType, `dtype "Q4"`},
		{"unknown field", craft(`{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8],"x":1}}`, buf8), ErrHeader, "unknown field"},
		{"metadata not strings", craft(`{"__metadata__":{"a":1}}`, nil), ErrHeader, "__metadata__"},
		{"not json", craft(`{"a":`, nil), ErrHeader, "not valid JSON"},
		{"not an object", craft(`[1]`, nil), ErrHeader, "not a JSON object"},
		{"junk after header", craft(`{} x`, nil), ErrHeader, "after the header's JSON object"},
		{"header too long", craft(`{}`, nil)[:8], ErrTruncated, "ends inside the header"},
		{"huge header", append(binary.LittleEndian.AppendUint64(nil, 1<<62), '{'), ErrHeader, "not a safetensors file"},
		{"short", []byte{1, 2}, ErrTruncated, "before the 8-byte header length"},
		{"truncated", good[:len(good)-3], ErrOffsets, "outside the byte buffer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "header too long" {
				tc.data = binary.LittleEndian.AppendUint64(nil, 100)
			}
			_, err := Read(bytes.NewReader(tc.data), int64(len(tc.data)), "f.safetensors")
			require.ErrorIs(t, err, tc.kind)
			require.ErrorContains(t, err, tc.want)
			require.True(t, strings.HasPrefix(err.Error(), "safetensors: f.safetensors: "), err.Error())
		})
	}
}
