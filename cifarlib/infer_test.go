package cifarlib

import (
	"errors"
	"math"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"
)

func TestModelLogits(t *testing.T) {
	backend := labtest.Backend(t)
	m, err := NewModel(data.CIFAR100(data.LabelsFine), ArchLinear).Head(10).Backend(backend).Done()
	require.NoError(t, err)
	b, err := labtest.StoryRecords(t, 4).Batch(0, 4)
	require.NoError(t, err)
	store := model.NewStore()
	logits, err := m.Logits(backend, store, b.Images)
	require.NoError(t, err)
	require.Equal(t, []int{4, 10}, logits.Shape().Dimensions)

	// The same weights through a hand-written executor give the same values, exactly.
	exec, err := model.NewExec(backend, store, func(scope *model.Scope, x *graph.Node) *graph.Node {
		return m.ModelFn(scope, nil, []*graph.Node{x})[0]
	})
	require.NoError(t, err)
	out, err := exec.Exec(b.Images)
	require.NoError(t, err)
	require.Equal(t, tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](logits))

	// A bad input is the model's typed error, not a panic.
	_, err = m.Logits(backend, nil, tensors.FromFlatDataAndDimensions(b.Host.Images, 4, 3, 32, 32))
	var shape *InputShapeError
	require.ErrorAs(t, err, &shape)
	_, err = m.Logits(nil, nil, b.Images)
	require.ErrorIs(t, err, ErrNoBackend)
}

// TestLossesShowSilentZero is the story's silent failure through the one-call API: with a
// 10-output head on CIFAR-100 labels, every example whose label is >= 10 has a plain loss of
// exactly 0, GoMLX's batch loss is the mean of the per-example losses, and the guarded loss
// refuses the batch with a *HeadMismatchError.
func TestLossesShowSilentZero(t *testing.T) {
	backend := labtest.Backend(t)
	m, err := NewModel(data.CIFAR100(data.LabelsFine), ArchLinear).Head(10).Backend(backend).Done()
	require.NoError(t, err)
	b, err := labtest.StoryRecords(t, 64).Batch(0, 64)
	require.NoError(t, err)
	l, err := m.Losses(backend, nil, b)
	require.NoError(t, err)
	require.Len(t, l.Plain, 64)
	var sum float64
	wantBeyond := 0
	for i, label := range l.Labels {
		sum += float64(l.Plain[i])
		if label >= 10 {
			wantBeyond++
			require.Equal(t, float32(0), l.Plain[i], "example %d, label %d", i, label)
		} else {
			require.Greater(t, l.Plain[i], float32(0), "example %d, label %d", i, label)
		}
	}
	beyond, zero := l.Beyond()
	require.Equal(t, wantBeyond, beyond)
	require.Equal(t, wantBeyond, zero)
	require.Greater(t, beyond, 40)
	require.InDelta(t, sum/64, float64(l.PlainMean), testenv.TolFloat32Ref) // A float32 mean of 64 losses near 2.3: sqrt(64)·u·2.3 = 1.1e-6.
	var head *HeadMismatchError
	require.ErrorAs(t, l.GuardErr, &head)
	require.Equal(t, 10, head.HeadWidth)
	require.Contains(t, l.String(), "example  label  class            loss\n")
	require.Contains(t, l.String(), "guarded loss: refuses the batch: model head has 10 outputs but dataset cifar100 has 100 classes")

	// With the factory's head the guarded loss accepts the batch and equals GoMLX's (no label
	// is out of range).
	good, err := NewModel(data.CIFAR100(data.LabelsFine), ArchLinear).Backend(backend).Done()
	require.NoError(t, err)
	l, err = good.Losses(backend, nil, b)
	require.NoError(t, err)
	require.NoError(t, l.GuardErr)
	beyond, _ = l.Beyond()
	require.Zero(t, beyond)
	require.InDelta(t, float64(l.PlainMean), float64(l.Guarded), testenv.TolFloat32Ref)
}

func TestLossOn(t *testing.T) {
	backend := labtest.Backend(t)
	spec := data.CIFAR100(data.LabelsFine)
	m, err := NewModel(spec, ArchLinear).Backend(backend).Done()
	require.NoError(t, err)
	b, err := labtest.StoryRecords(t, 200).Batch(0, 200)
	require.NoError(t, err)
	store := model.NewStore()
	plain, err := m.LossOn(backend, b.Images, b.Labels, LossOptions{Guard: GuardOff, Store: store})
	require.NoError(t, err)
	guarded, err := m.LossOn(backend, b.Images, b.Labels, LossOptions{Store: store})
	require.NoError(t, err)
	require.InDelta(t, float64(plain), float64(guarded), testenv.TolFloat32Ref)
	require.False(t, math.IsNaN(float64(plain)))

	// Labels made 1-based on the device: every 99 becomes 100, which the in-graph guard counts.
	want99 := 0
	for _, l := range b.Host.Labels {
		if l == 99 {
			want99++
		}
	}
	require.Positive(t, want99)
	_, err = m.LossOn(backend, b.Images, b.Labels, LossOptions{MapLabels: func(l *graph.Node) *graph.Node { return graph.AddScalar(l, 1) }})
	var dev *DeviceLabelError
	require.ErrorAs(t, err, &dev)
	require.Equal(t, want99, dev.NumBad)
	require.Equal(t, 100, dev.Bad[0].Label)

	narrow, err := NewModel(spec, ArchLinear).Head(10).Backend(backend).Done()
	require.NoError(t, err)
	_, err = narrow.LossOn(backend, b.Images, b.Labels, LossOptions{Guard: GuardStatic})
	require.ErrorIs(t, err, ErrHeadMismatch)
}

func TestShapeMistakes(t *testing.T) {
	backend := labtest.Backend(t)
	m, err := NewModel(data.CIFAR100(data.LabelsFine), ArchLinear).Backend(backend).Done()
	require.NoError(t, err)
	b, err := labtest.StoryRecords(t, 8).Batch(0, 8)
	require.NoError(t, err)
	ms, err := ShapeMistakes(backend, m, 10, b)
	require.NoError(t, err)
	var (
		head  *HeadMismatchError
		shape *InputShapeError
		bsz   *BatchSizeMismatchError
		dtype *LabelDTypeError
		lshp  *LabelShapeError
	)
	want := []struct {
		name   string
		target any
		text   string
	}{
		{"head too small (10 outputs, 100 classes)", &head, "model head has 10 outputs but dataset cifar100 has 100 classes"},
		{"channels-first images [8, 3, 32, 32]", &shape, "channels-first"},
		{"a single image without a batch axis [32, 32, 3]", &shape, "rank 3"},
		{"8 images but 7 labels", &bsz, "batch has 8 images but 7 labels"},
		{"float labels [8, 1]", &dtype, "labels have dtype float32"},
		{"one-hot labels [8, 100] into a 10-output head", &lshp, "one-hot labels have shape [8 100]"},
	}
	require.Len(t, ms, len(want))
	for i, w := range want {
		require.Equal(t, w.name, ms[i].Name)
		require.True(t, errors.As(ms[i].Err, w.target), "%s: %T %v", w.name, ms[i].Err, ms[i].Err)
		require.ErrorContains(t, ms[i].Err, w.text)
	}
	_, err = ShapeMistakes(backend, m, 10, &data.Batch{Host: &data.HostBatch{Labels: []int32{1}}})
	require.ErrorContains(t, err, "at least 2 examples")
}
