package training

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResultRecipeLineTravels: the summary's recipe line survives the JSON a Result travels
// as from the lab process to the cell (it was an unexported field, and lab.Fit's summary lost it).
func TestResultRecipeLineTravels(t *testing.T) {
	s := Airbench94()
	s.Run.Epochs = 2
	sent := &Result{Recipe: recipeAirbench94, RecipeSettings: recipeSettings(&s, 0)}
	payload, err := json.Marshal(sent)
	require.NoError(t, err)
	var got Result
	require.NoError(t, json.Unmarshal(payload, &got))
	var summary strings.Builder
	require.NoError(t, got.WriteSummary(&summary))
	require.Contains(t, summary.String(), "recipe airbench94: airbench94, 2 epochs at batch 1024, nesterov")
}
