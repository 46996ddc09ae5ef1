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

// TestHistoryChartsShareTheLegendColumn: the loss and accuracy charts of a run are drawn with
// the wider of their two legend columns, so that their last steps line up one above the other.
func TestHistoryChartsShareTheLegendColumn(t *testing.T) {
	h := testHistory()
	loss, err := LossChart(h)
	require.NoError(t, err)
	acc, err := AccuracyChart(h)
	require.NoError(t, err)
	require.Less(t, legendColumn(loss), legendColumn(acc), "the accuracy legend is the wider one")
	want, err := svgWithColumn(loss, legendColumn(acc))
	require.NoError(t, err)
	charts := historyCharts(h)
	require.NoError(t, charts[0].err)
	require.Equal(t, want, charts[0].svg)
	alone, err := SVG(loss)
	require.NoError(t, err)
	require.NotEqual(t, alone, charts[0].svg, "alone, the loss chart's column is narrower")
}
