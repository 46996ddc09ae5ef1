package nb

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCountTicks(t *testing.T) {
	var labels []string
	for _, tick := range (countTicks{}).Ticks(0, 50.6) {
		if tick.Label != "" {
			labels = append(labels, tick.Label)
		}
	}
	require.Equal(t, []string{"0", "25", "50"}, labels)
}
