package runs

import (
	"os"
	"testing"

	"github.com/gomlx/gomlx/ui/plot"
	"github.com/stretchr/testify/require"
)

func TestHistoryPlotPoints(t *testing.T) {
	h := &History{TopK: 5}
	h.Add(HistoryPoint{Step: 1, Loss: 4, MovingLoss: 4.5, Accuracy: 0.1, TopK: 0.3, LearningRate: 0.001})
	h.Add(HistoryPoint{Step: 2, Loss: 3, MovingLoss: 3.5, Accuracy: 0.2, TopK: 0.4, LearningRate: 0.001,
		Eval: &EvalPoint{Examples: 50, Loss: 3.25, Accuracy: 0.25, TopK: 0.5}})
	require.Equal(t, []plot.Point{
		{MetricName: "Train: Moving Average Loss", Short: "T/~loss", MetricType: "loss", Step: 1, Value: 4.5},
		{MetricName: "Train: Moving Average Accuracy", Short: "T/~acc", MetricType: "accuracy", Step: 1, Value: 0.1},
		{MetricName: "Train: Moving Average Top-5 Accuracy", Short: "T/~top5", MetricType: "accuracy", Step: 1, Value: 0.3},
		{MetricName: "Learning Rate", Short: "lr", MetricType: "learning rate", Step: 1, Value: 0.001},
		{MetricName: "Train: Moving Average Loss", Short: "T/~loss", MetricType: "loss", Step: 2, Value: 3.5},
		{MetricName: "Train: Moving Average Accuracy", Short: "T/~acc", MetricType: "accuracy", Step: 2, Value: 0.2},
		{MetricName: "Train: Moving Average Top-5 Accuracy", Short: "T/~top5", MetricType: "accuracy", Step: 2, Value: 0.4},
		{MetricName: "Learning Rate", Short: "lr", MetricType: "learning rate", Step: 2, Value: 0.001},
		{MetricName: "Test: Mean Loss", Short: "loss(test)", MetricType: "loss", Step: 2, Value: 3.25},
		{MetricName: "Test: Accuracy", Short: "acc(test)", MetricType: "accuracy", Step: 2, Value: 0.25},
		{MetricName: "Test: Top-5 Accuracy", Short: "top5(test)", MetricType: "accuracy", Step: 2, Value: 0.5},
	}, h.PlotPoints())

	// A point at an earlier step (a run resumed from an older checkpoint) drops the later ones.
	h.Add(HistoryPoint{Step: 2, Loss: 2})
	require.Len(t, h.Points, 2)
	h.Add(HistoryPoint{Step: 1, Loss: 1})
	require.Len(t, h.Points, 1)
	last, ok := h.Last()
	require.True(t, ok)
	require.Equal(t, 1.0, last.Loss)
	_, ok = (&History{}).Last()
	require.False(t, ok)

	// Outside a notebook Plot draws nothing.
	require.NoError(t, h.Plot())
}

func TestHistorySaveLoad(t *testing.T) {
	dir := t.TempDir()
	h := &History{TopK: 5, Points: []HistoryPoint{{Step: 3, Loss: 1.5, MovingLoss: 2, Accuracy: 0.5, LearningRate: 0.01,
		Eval: &EvalPoint{Examples: 10, Loss: 1, Accuracy: 0.7, TopK: 0.9}}}}
	require.NoError(t, h.Save(dir))
	got, err := LoadHistory(dir)
	require.NoError(t, err)
	require.Equal(t, h, got)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left behind")
	require.Equal(t, HistoryFileName, entries[0].Name())

	empty, err := LoadHistory(t.TempDir())
	require.NoError(t, err)
	require.Equal(t, &History{}, empty)

	require.NoError(t, os.WriteFile(dir+"/"+HistoryFileName, []byte("{not json"), 0o644))
	_, err = LoadHistory(dir)
	require.ErrorContains(t, err, dir+"/"+HistoryFileName+": invalid character 'n' looking for beginning of object key string: "+
		"delete the file to start a new history")
}
