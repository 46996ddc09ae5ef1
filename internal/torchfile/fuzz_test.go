package torchfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReadTorch feeds arbitrary bytes to Read, seeded with the PyTorch-written fixtures. It may
// not panic; a refusal is an *Error of a known kind naming the input; in an accepted file every
// tensor lies inside its storage and converts without allocating more than the storage holds.
func FuzzReadTorch(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.pt"))
	require.NoError(f, err)
	for _, path := range paths {
		data, err := os.ReadFile(path)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Read(bytes.NewReader(data), int64(len(data)), "fuzz")
		if err != nil {
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("error is not a *Error: %v", err)
			}
			if te.File != "fuzz" || te.Offset < -1 || te.Offset > int64(len(data)) {
				t.Fatalf("error points outside the input: %+v", te)
			}
			known := false
			for _, kind := range []error{ErrUnsafe, ErrFormat, ErrTruncated, ErrDType} {
				known = known || errors.Is(err, kind)
			}
			if !known {
				t.Fatalf("unknown error kind: %v", err)
			}
			return
		}
		walkTensors(file.Root, func(tensor *Tensor) {
			require.LessOrEqual(t, tensor.Numel()*tensor.DType.Size(), len(tensor.Storage.Data))
			if tensor.DType.IsFloat() {
				v, err := tensor.Float32()
				require.NoError(t, err)
				require.Len(t, v, tensor.Numel())
			} else {
				v, err := tensor.Int64()
				require.NoError(t, err)
				require.Len(t, v, tensor.Numel())
			}
		}, 0)
	})
}

// walkTensors calls f on every tensor of a decoded value.
func walkTensors(v any, f func(*Tensor), depth int) {
	if depth > maxDepth+1 {
		return
	}
	switch x := v.(type) {
	case *Tensor:
		f(x)
	case *Dict:
		for _, e := range x.Values {
			walkTensors(e, f, depth+1)
		}
	case []any:
		for _, e := range x {
			walkTensors(e, f, depth+1)
		}
	}
}
