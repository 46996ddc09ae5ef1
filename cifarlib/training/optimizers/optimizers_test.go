package optimizers

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// New gives each algorithm with its defaults, by name in any case; an unknown name is refused
// with the algorithms' names; Param and WithParam read and set an algorithm's own settings, and
// say which it lacks.
func TestNewAndParams(t *testing.T) {
	require.Equal(t, []string{"adam", "adamw", "adamax", "rmsprop", "sgd", "nesterov"}, Algorithms())
	for _, name := range Algorithms() {
		o, err := New(" " + name + " ")
		require.NoError(t, err)
		require.Equal(t, name, o.Algorithm())
	}
	o, err := New("Nesterov")
	require.NoError(t, err)
	require.Equal(t, Nesterov{LearningRate: 11.5, Momentum: 0.85, WeightDecay: 0.0153, BiasScaler: 64}, o)
	require.Equal(t, Adam{LearningRate: 0.001}, Default())
	_, err = New("lion")
	require.EqualError(t, err, `optimizers: unknown optimizer "lion": use one of adam, adamw, adamax, rmsprop, sgd, nesterov`)

	m, ok := Param(o, "Momentum")
	require.Equal(t, []any{0.85, true}, []any{m, ok})
	_, ok = Param(Default(), "Momentum")
	require.False(t, ok, "adam has no momentum")
	o, ok = WithParam(o, "WhitenBiasEpochs", 3)
	require.True(t, ok)
	require.Equal(t, 3, o.(Nesterov).WhitenBiasEpochs)
	_, ok = WithParam(Default(), "Momentum", 0.9)
	require.False(t, ok)
}
