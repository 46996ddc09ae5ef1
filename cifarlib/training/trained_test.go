package training

import (
	"context"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"
)

// TestTrainResultCarriesTrained: what Train returns computes with the trained weights, and the
// same run loaded from its checkpoint gives the same logits and losses.
func TestTrainResultCarriesTrained(t *testing.T) {
	backend := labtest.Backend(t)
	spec := data.CIFAR100(data.LabelsFine)
	recs := labtest.StoryRecords(t, 128)
	dir := t.TempDir()
	s := with(t, Defaults(), map[string]string{"model": cifarlib.ArchLinear, "steps": "3", "batch": "32", "seed": "1", "no-eval": "true",
		"checkpoint": dir})
	s.Data.Spec = spec
	res, err := Train(context.Background(), s, Env{Train: recs, Test: recs, Backend: backend, Progress: ProgressOff})
	require.NoError(t, err)
	require.NotNil(t, res.Trained)
	b, err := recs.Batch(0, 32)
	require.NoError(t, err)
	trained, err := res.Logits(b.Images)
	require.NoError(t, err)
	fresh, err := res.Trained.Model.Logits(backend, nil, b.Images)
	require.NoError(t, err)
	require.NotEqual(t, tensors.MustCopyFlatData[float32](fresh), tensors.MustCopyFlatData[float32](trained))

	ckpt, err := LoadCheckpoint(dir, backend)
	require.NoError(t, err)
	loaded, err := ckpt.Logits(b.Images)
	require.NoError(t, err)
	require.Equal(t, tensors.MustCopyFlatData[float32](trained), tensors.MustCopyFlatData[float32](loaded))
	l1, err := res.Losses(b)
	require.NoError(t, err)
	l2, err := ckpt.Losses(b)
	require.NoError(t, err)
	require.Equal(t, l1.Plain, l2.Plain)
	ev, err := ckpt.Evaluate(context.Background(), recs, EvalOptions{})
	require.NoError(t, err)
	require.Equal(t, 128, ev.Examples)
}
