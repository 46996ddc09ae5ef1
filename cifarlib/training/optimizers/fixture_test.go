package optimizers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// airbenchFixture is testdata/recipe/airbench94.json: what airbench 0.1.8's own code (PyTorch)
// computes for the triangle schedule, its optimizer and its lookahead (testdata/recipe/gen.py).
type airbenchFixture struct {
	Triangle map[string][]float64 `json:"triangle"`
	Nesterov struct {
		LearningRate float64                `json:"learning_rate"`
		Momentum     float64                `json:"momentum"`
		WeightDecay  float64                `json:"weight_decay"`
		BiasScaler   float64                `json:"bias_scaler"`
		BatchSize    int                    `json:"batch_size"`
		Steps        int                    `json:"steps"`
		WhitenSteps  int                    `json:"whiten_steps"`
		Initial      map[string][]float64   `json:"initial"`
		Grads        []map[string][]float64 `json:"grads"`
		After        []map[string][]float64 `json:"after"`
	} `json:"nesterov"`
	Lookahead struct {
		Total   int                    `json:"total"`
		Start   map[string][]float64   `json:"start"`
		Trained []map[string][]float64 `json:"trained"`
		Result  []map[string][]float64 `json:"result"`
	} `json:"lookahead"`
}

func loadAirbenchFixture(t *testing.T) *airbenchFixture {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "recipe", "airbench94.json"))
	require.NoError(t, err)
	var f airbenchFixture
	require.NoError(t, json.Unmarshal(raw, &f))
	return &f
}
