package nb

import (
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/stretchr/testify/require"
)

// TestShownPath: paths in $CIFARLAB_DATA's folder are printed from it, every other path as it is.
func TestShownPath(t *testing.T) {
	root := t.TempDir()
	t.Setenv(data.DirEnv, root)
	for _, c := range []struct{ path, want string }{
		{root, "$CIFARLAB_DATA"},
		{filepath.Join(root, "runs", "01-unguarded"), "$CIFARLAB_DATA/runs/01-unguarded"},
		{filepath.Join(root, "synthetic", "cifar-100-binary", "train.bin"), "$CIFARLAB_DATA/synthetic/cifar-100-binary/train.bin"},
		{filepath.Dir(root), filepath.Dir(root)},
		{filepath.Join(filepath.Dir(root), filepath.Base(root)+"-other", "runs"), filepath.Join(filepath.Dir(root), filepath.Base(root)+"-other", "runs")},
		{"relative/runs", "relative/runs"},
	} {
		require.Equal(t, c.want, shownPath(c.path), c.path)
	}
	t.Setenv(data.DirEnv, "")
	require.Equal(t, filepath.Join(root, "runs"), shownPath(filepath.Join(root, "runs")))
}

func TestShownText(t *testing.T) {
	root := t.TempDir()
	t.Setenv(data.DirEnv, root)
	other := filepath.Join(filepath.Dir(root), filepath.Base(root)+"-other", "runs")
	text := "Dataset switch checklist for run " + filepath.Join(root, "runs", "06-cifar10") + " (trained on cifar10):\n" +
		"5000 labels (train split, " + filepath.Join(root, "synthetic") + "): 0..99\n" +
		"elsewhere: " + other + "\n"
	require.Equal(t, "Dataset switch checklist for run $CIFARLAB_DATA/runs/06-cifar10 (trained on cifar10):\n"+
		"5000 labels (train split, $CIFARLAB_DATA/synthetic): 0..99\n"+
		"elsewhere: "+other+"\n", shownText(text))
	t.Setenv(data.DirEnv, "")
	require.Equal(t, text, shownText(text))
}
