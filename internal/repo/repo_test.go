package repo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeCheckout makes a folder whose go.mod declares module (quoted when quote is set).
func fakeCheckout(t *testing.T, module string, quote bool) string {
	t.Helper()
	dir := t.TempDir()
	if quote {
		module = `"` + module + `"`
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("// a comment\nmodule "+module+"\n\ngo 1.26\n"), 0o644))
	return dir
}

func TestIs(t *testing.T) {
	require.True(t, Is(fakeCheckout(t, ModulePath, false)))
	require.True(t, Is(fakeCheckout(t, ModulePath, true)))
	require.False(t, Is(fakeCheckout(t, ModulePath+"/tools", false)))
	require.False(t, Is(t.TempDir()), "no go.mod")
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.True(t, Is(filepath.Join(wd, "..", "..")), "this checkout")
}

func TestFind(t *testing.T) {
	checkout := fakeCheckout(t, ModulePath, false)
	deep := filepath.Join(checkout, "a", "b")
	require.NoError(t, os.MkdirAll(deep, 0o755))

	t.Setenv(Env, "")
	t.Chdir(deep)
	dir, searched := Find()
	require.Equal(t, checkout, dir, "found from the working directory upwards")
	require.Equal(t, deep, searched[0])
	require.Equal(t, checkout, Dir())

	t.Setenv(Env, checkout)
	dir, searched = Find()
	require.Equal(t, checkout, dir)
	require.Equal(t, []string{checkout}, searched)

	other := t.TempDir()
	t.Setenv(Env, other)
	dir, searched = Find()
	require.Equal(t, "", dir, "$CIFARLAB_REPO naming no checkout is not searched past")
	require.Equal(t, []string{other}, searched)
}
