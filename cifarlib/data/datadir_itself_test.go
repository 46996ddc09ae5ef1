package data

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFolderItself: a data folder that is the dataset's folder itself (binary or python layout)
// is refused wherever it is read, prepared or downloaded into, with the folder that holds it;
// nothing is written into it.
func TestFolderItself(t *testing.T) {
	spec := CIFAR10()
	root := t.TempDir()
	require.NoError(t, Synthesize(root, spec, SynthOptions{Seed: 1, TrainSize: 50, TestSize: 10}))
	py := filepath.Join(t.TempDir(), spec.InLayout(LayoutPython).Dir)
	require.NoError(t, os.MkdirAll(py, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(py, "test_batch"), []byte("x"), 0o644))
	for _, c := range []struct {
		given  string
		layout Layout
		folder string
	}{
		{filepath.Join(root, spec.Dir), LayoutBinary, "cifar-10-batches-bin"},
		{py, LayoutPython, "cifar-10-batches-py"},
	} {
		want := &FolderItselfError{Dataset: "cifar10", Folder: c.folder, Layout: c.layout, Given: c.given, Parent: filepath.Dir(c.given)}
		_, err := LoadSplit(c.given, spec, SplitTrain)
		var got *FolderItselfError
		require.True(t, errors.As(err, &got), "%v", err)
		require.Equal(t, want, got)
		require.EqualError(t, err, "data: "+c.given+" is the cifar10 folder itself (its files are there, in the "+c.layout.String()+
			" layout), not the folder that holds "+c.folder+"/: use the data folder "+want.Parent+" (or set CIFARLAB_DATA="+want.Parent+")")

		st := StateOf(c.given, spec)
		require.Equal(t, KindNone, st.Kind)
		require.Equal(t, want, st.Itself)
		require.Contains(t, st.String(), "use the data folder "+want.Parent)
		_, err = st.LoadSplit(SplitTest)
		require.ErrorAs(t, err, &got)

		_, err = PrepareState(c.given, spec, SynthOptions{})
		require.ErrorAs(t, err, &got)
		require.NoDirExists(t, SyntheticDir(c.given), "nothing synthesized one level too deep")

		err = Download(context.Background(), c.given, spec, DownloadOptions{URL: "http://127.0.0.1:1/never"})
		require.ErrorAs(t, err, &got)
		require.NoDirExists(t, filepath.Join(c.given, spec.Dir))
	}

	// The folder that holds it reads as before.
	recs, err := LoadSplit(root, spec, SplitTrain)
	require.NoError(t, err)
	require.Equal(t, 50, recs.Len())
	require.Nil(t, StateOf(root, spec).Itself)
	require.Nil(t, StateOf(t.TempDir(), spec).Itself, "an empty folder is no dataset folder")
}
