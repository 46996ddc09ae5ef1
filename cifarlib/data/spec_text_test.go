package data

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A Spec travels as its ID, and comes back whole.
func TestSpecText(t *testing.T) {
	for _, spec := range []Spec{CIFAR10(), CIFAR100(LabelsFine), CIFAR100(LabelsCoarse), {}} {
		b, err := json.Marshal(spec)
		require.NoError(t, err)
		require.Equal(t, `"`+spec.ID()+`"`, string(b))
		var got Spec
		require.NoError(t, json.Unmarshal(b, &got))
		require.Equal(t, spec, got)
	}
	var got Spec
	require.EqualError(t, json.Unmarshal([]byte(`"mnist"`), &got), `data: unknown dataset "mnist": use "cifar10" or "cifar100"`)
}
