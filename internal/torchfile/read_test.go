package torchfile

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadStateDict reads a state_dict written by real PyTorch (testdata/make_fixtures.py)
// and compares every tensor with the values torch.load read back (expected.json): exact, as
// the values are only copied (float64 and float16/bfloat16 are exact in float64 JSON too).
func TestReadStateDict(t *testing.T) {
	f, err := ReadFile(filepath.Join("testdata", "state_dict.pt"))
	require.NoError(t, err)
	require.Equal(t, "state_dict", f.Prefix)
	raw, err := os.ReadFile(filepath.Join("testdata", "expected.json"))
	require.NoError(t, err)
	var want map[string]struct {
		DType  string    `json:"dtype"`
		Shape  []int     `json:"shape"`
		Values []float64 `json:"values"`
	}
	require.NoError(t, json.Unmarshal(raw, &want))
	sd, ok := f.Root.(*Dict)
	require.True(t, ok, "root is %T", f.Root)
	require.Equal(t, []any{"conv.weight", "double", "half", "bf16", "transposed", "offset_view", "num_batches_tracked", "mask"}, sd.Keys)
	for _, key := range sd.Keys {
		v, _ := sd.Get(key.(string))
		tensor := v.(*Tensor)
		w := want[key.(string)]
		require.Equal(t, w.DType, string(tensor.DType), key)
		require.Equal(t, w.Shape, append([]int{}, tensor.Shape...), key)
		if tensor.DType.IsFloat() {
			got, err := tensor.Float32()
			require.NoError(t, err)
			for i, x := range w.Values {
				require.Equal(t, float32(x), got[i], "%s[%d]", key, i)
			}
			_, err = tensor.Int64()
			require.Error(t, err)
			continue
		}
		got, err := tensor.Int64()
		require.NoError(t, err)
		for i, x := range w.Values {
			require.Equal(t, int64(x), got[i], "%s[%d]", key, i)
		}
		_, err = tensor.Float32()
		require.Error(t, err)
	}
	// The two views share one storage, read once.
	tv, _ := sd.Get("transposed")
	ov, _ := sd.Get("offset_view")
	require.Same(t, tv.(*Tensor).Storage, ov.(*Tensor).Storage)
	require.Equal(t, 2, ov.(*Tensor).Offset)
	require.Equal(t, []int{1, 4}, tv.(*Tensor).Strides)
}

// TestReadWrappers reads a checkpoint dict and an nn.Parameter.
func TestReadWrappers(t *testing.T) {
	f, err := ReadFile(filepath.Join("testdata", "checkpoint.pt"))
	require.NoError(t, err)
	root := f.Root.(*Dict)
	acc, _ := root.Get("acc")
	epoch, _ := root.Get("epoch")
	require.Equal(t, 93.5, acc)
	require.Equal(t, 3, epoch)
	net, _ := root.Get("net")
	require.Equal(t, []any{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}, net.(*Dict).Keys)
	v, _ := net.(*Dict).Get("running_var")
	got, err := v.(*Tensor).Float32()
	require.NoError(t, err)
	require.Equal(t, []float32{1, 1}, got)

	f, err = ReadFile(filepath.Join("testdata", "parameter.pt"))
	require.NoError(t, err)
	w, _ := f.Root.(*Dict).Get("w")
	got, err = w.(*Tensor).Float32()
	require.NoError(t, err)
	require.Equal(t, []float32{1, 1, 1, 1}, got)
	require.Equal(t, "float32[2, 2]", w.(*Tensor).String())
}

// TestReadRefuses reads hostile and foreign files written by PyTorch (testdata/make_fixtures.py):
// each is refused with an *Error of the right kind that names the problem.
func TestReadRefuses(t *testing.T) {
	for _, tc := range []struct {
		file string
		kind error
		want string
	}{
		{"evil_os_system.pt", ErrUnsafe, "posix.system: global not allowed"},
		{"evil_plain_object.pt", ErrUnsafe, "__main__.Plain: global not allowed"},
		{"evil_size_overrun.pt", ErrFormat, "size [5, 3] has more elements than its storage (6)"},
		{"evil_stride_overrun.pt", ErrFormat, "storage offset 0 with size [2, 3] and stride [3, 2] overruns the storage of 6 elements"},
		{"evil_offset_overrun.pt", ErrFormat, "storage offset 1 with size [2, 3] and stride [3, 1] overruns"},
		{"evil_numel.pt", ErrFormat, "declares 7 float32 elements (28 bytes) but its entry _small/data/0 holds 24 bytes"},
		{"evil_short_entry.pt", ErrFormat, "declares 6 float32 elements (24 bytes) but its entry _small/data/0 holds 20 bytes"},
		{"evil_path.pt", ErrFormat, `"../..": storage key is not a plain name`},
		{"evil_truncated.pt", ErrTruncated, "not a complete zip archive"},
		{"legacy.pt", ErrFormat, "legacy torch.save format"},
		{"torchscript.pt", ErrFormat, "TorchScript archive"},
		{"complex.pt", ErrDType, "torch.ComplexFloatStorage: tensors of this dtype are not handled"},
		{"expected.json", ErrFormat, "not a torch.save file"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, err := ReadFile(filepath.Join("testdata", tc.file))
			require.ErrorIs(t, err, tc.kind)
			require.ErrorContains(t, err, tc.want)
			var te *Error
			require.ErrorAs(t, err, &te)
			require.Contains(t, te.File, tc.file)
		})
	}
}

// TestReadRefusesCrafted covers what torch.save cannot write: a storage entry recompressed (a
// zip bomb's way to lie about sizes), a zip cut short, and pickles that reach for gopickle's
// built-in globals, use refused opcodes, nest MARKs without end or go on after STOP.
func TestReadRefusesCrafted(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "checkpoint.pt"))
	require.NoError(t, err)
	_, err = Read(bytes.NewReader(data[:len(data)-30]), int64(len(data)-30), "cut")
	require.ErrorIs(t, err, ErrTruncated)

	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range zr.File {
		method := zip.Store
		if strings.HasSuffix(f.Name, "/data/0") {
			method = zip.Deflate
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: method})
		require.NoError(t, err)
		rc, err := f.Open()
		require.NoError(t, err)
		_, err = io.Copy(w, rc)
		require.NoError(t, err)
		rc.Close()
	}
	require.NoError(t, zw.Close())
	_, err = Read(bytes.NewReader(out.Bytes()), int64(out.Len()), "deflated")
	require.ErrorIs(t, err, ErrFormat)
	require.ErrorContains(t, err, "entry checkpoint/data/0: entry is compressed (method 8)")

	for _, tc := range []struct {
		pickle string
		kind   error
		want   string
	}{
		{"\x80\x02X\xff\xff\xff\x7fab", ErrTruncated, "at byte offset 2: the pickle ends (after 9 bytes) inside a string of 2147483647 bytes"},
		{"\x80\x02c__builtin__\nobject\n.", ErrUnsafe, "__builtin__.object: global not allowed: a state_dict pickle names only torch's"},
		{"\x80\x04\x8c\x08copy_reg\x94.", ErrUnsafe, `"copy_reg": the string names a module of globals that are not allowed`},
		{"\x80\x02\x81.", ErrUnsafe, "0x81: pickle opcode not allowed in a state_dict pickle"},
		{"\x80\x02P0\n.", ErrUnsafe, "0x50: pickle opcode not allowed"},
		{"\x80\x02" + strings.Repeat("(", maxPickleOps+1) + ".", ErrFormat, "more than 131072 pickle opcodes: not a state_dict pickle"},
		{"\x80\x02N.junk", ErrFormat, "4 bytes after the pickle's STOP opcode"},
		{"\x80\x02ctorch\nFloatStorage\n.", ErrFormat, "torchfile.storageType: a value a state_dict does not hold"},
	} {
		d := &decoder{name: "p", storages: map[string]*Storage{}}
		v, err := d.unpickle([]byte(tc.pickle))
		if err == nil {
			_, err = fromRoot(d, v)
		}
		require.ErrorIs(t, err, tc.kind, "%q", tc.pickle)
		require.ErrorContains(t, err, tc.want)
	}
}

// fromRoot converts a decoded root as Read does and requires a dict.
func fromRoot(d *decoder, v any) (any, error) {
	c, err := d.convert(v, map[any]any{}, 0)
	if err != nil {
		return nil, err
	}
	if _, ok := c.(*Dict); !ok {
		return nil, &Error{File: d.name, Offset: -1, Kind: ErrFormat, Reason: "not a dict"}
	}
	return c, nil
}
