package cifarlib

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// The model's own normalisation: the Spec's by default, Input when set; a std that is not
// positive is refused; the statistics' text form reads back exactly.
func TestInputNormalization(t *testing.T) {
	spec := data.CIFAR10()
	m, err := NewModel(spec, ArchCNN).Done()
	require.NoError(t, err)
	require.True(t, m.Input.IsZero())
	require.Equal(t, SpecNormalization(spec), m.Normalization())

	own := InputNormalization{Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.2023, 0.1994, 0.201}}
	m, err = NewModel(spec, ArchCNN).Input(own).Done()
	require.NoError(t, err)
	require.Equal(t, own, m.Normalization())
	require.Equal(t, "transforms.Normalize((0.5, 0.5, 0.5), (0.2023, 0.1994, 0.201))", own.String())

	bad := own
	bad.Std[1] = 0
	_, err = NewModel(spec, ArchCNN).Input(bad).Done()
	require.ErrorContains(t, err, "cifarlib: input normalisation")
	require.ErrorContains(t, err, "std of channel 1 must be positive")

	text := JoinStats(own.Std)
	require.Equal(t, "0.2023,0.1994,0.201", text)
	back, err := ParseStats(text)
	require.NoError(t, err)
	require.Equal(t, own.Std, back)
	_, err = ParseStats("1,2")
	require.ErrorContains(t, err, "want 3 comma-separated values")
	_, err = ParseStats("1,x,2")
	require.ErrorContains(t, err, `cifarlib: statistics "1,x,2"`)
}
