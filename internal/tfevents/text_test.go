package tfevents_test

import (
	"testing"

	"github.com/cifarlab/cifarlab/internal/tfevents"
	"github.com/cifarlab/cifarlab/internal/tfevents/tbtest"
	"github.com/stretchr/testify/require"
)

// TestTextReadByTensorBoard: text summaries, next to scalars, are what TensorBoard's text plugin
// reads back (UTF-8 and Markdown kept as written).
func TestTextReadByTensorBoard(t *testing.T) {
	tbtest.Python(t) // fails in CI, skips elsewhere, without TensorBoard
	dir := t.TempDir()
	w, err := tfevents.Create(dir)
	require.NoError(t, err)
	require.NoError(t, w.Text(1, "data", "synthetic cifar10, binary layout, 5000 train / 1000 test images"))
	require.NoError(t, w.Scalars(1, tfevents.Scalar{Tag: "train/loss", Value: 2.5}))
	require.NoError(t, w.Text(2, "note", "**résumé** ✓"))
	require.NoError(t, w.Close())
	require.Equal(t, map[string][]string{
		"data": {"synthetic cifar10, binary layout, 5000 train / 1000 test images"},
		"note": {"**résumé** ✓"},
	}, tbtest.ReadTexts(t, dir))
}
