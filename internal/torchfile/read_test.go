package torchfile

import (
	"bytes"
	"encoding/json"
	"errors"
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
		{"evil_plain_object.pt", ErrUnsafe, "opcode 0x81: pickle opcode not allowed"},
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

// TestReadRefusesCrafted covers what torch.save cannot write: a compressed storage entry
// (a zip bomb's way to lie about sizes) and a pickle cut short inside a length.
func TestReadRefusesCrafted(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "checkpoint.pt"))
	require.NoError(t, err)
	_, err = Read(bytes.NewReader(data[:len(data)-30]), int64(len(data)-30), "cut")
	require.ErrorIs(t, err, ErrTruncated)

	pkl := []byte("\x80\x02X\xff\xff\xff\x7fab")
	err = scanPickle(pkl, func(kind error, at int, value, format string, args ...any) error {
		return &Error{File: "p", Offset: int64(at), Kind: kind, Reason: format}
	})
	require.ErrorIs(t, err, ErrTruncated)
	require.Equal(t, int64(2), err.(*Error).Offset)
	for _, evil := range []string{"\x80\x02c__builtin__\nobject\n.", "\x80\x04\x8c\x08copy_reg\x94.", "\x80\x02\x81.", "\x80\x02" + strings.Repeat("(", 70) + ".",
		"\x80\x02N.junk"} {
		err := scanPickle([]byte(evil), func(kind error, at int, value, format string, args ...any) error {
			return &Error{File: "p", Offset: int64(at), Kind: kind, Reason: format}
		})
		require.Error(t, err, "%q", evil)
		require.True(t, errors.Is(err, ErrUnsafe) || errors.Is(err, ErrFormat) || errors.Is(err, ErrTruncated))
	}
}
