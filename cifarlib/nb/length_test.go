package nb

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/stretchr/testify/require"
)

// TestEpochs: a notebook trains for the epochs it asks on real data (notebook 08 asks for its
// recipe's own, airbench94's 9.9), and SyntheticEpochs on the synthetic stand-in, as its data
// folder decides (nb.New).
func TestEpochs(t *testing.T) {
	backend, err := backends.New(backends.Go)
	require.NoError(t, err)
	spec := data.CIFAR10()
	synthetic := t.TempDir() // nothing there: the stand-in is generated
	real := t.TempDir()      // a copy of real-looking files: no synthetic marker
	require.NoError(t, data.Synthesize(real, spec, data.SynthOptions{Seed: 1, TrainSize: 20, TestSize: 10}))
	require.NoError(t, os.Remove(filepath.Join(real, spec.Dir, data.SyntheticMarker)))
	for _, c := range []struct {
		name, dir string
		asked     float64
		want      float64
	}{
		{"synthetic", synthetic, 9.9, SyntheticEpochs},
		{"synthetic, the recipe's length", synthetic, training.Airbench94().Run.Epochs, SyntheticEpochs},
		{"real", real, 3, 3},
		{"real, the recipe's length", real, training.Airbench94().Run.Epochs, 9.9},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := New(spec, backend, c.dir)
			require.NoError(t, err)
			require.Equal(t, c.dir == synthetic, l.Synthetic)
			kind := map[bool]string{true: data.KindSynthetic, false: data.KindUnverified}[l.Synthetic]
			require.Equal(t, kind, l.Train.Kind, "the splits say what they are, for the captions")
			require.Equal(t, kind, l.Test.Kind)
			require.Equal(t, c.want, l.Epochs(c.asked))
		})
	}
}
