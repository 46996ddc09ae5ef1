package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWriteFile checks that a written file appears whole and that a failed fill leaves neither
// the path nor a temporary file.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "f.bin")
	require.NoError(t, WriteFile(path, func(w io.Writer) error { _, err := w.Write([]byte("abc")); return err }))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "abc", string(got))

	boom := errors.New("boom")
	other := filepath.Join(dir, "sub", "g.bin")
	require.ErrorIs(t, WriteFile(other, func(w io.Writer) error { _, _ = w.Write([]byte("half")); return boom }), boom)
	entries, err := os.ReadDir(filepath.Join(dir, "sub"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "only f.bin is left")
}
