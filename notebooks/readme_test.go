package notebooks_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/nb"
	"github.com/stretchr/testify/require"
)

// TestReadmeSaysTheSyntheticLength: notebooks/README.md and notebook 08's own text say the
// length the notebook trains on the synthetic stand-in, nb.SyntheticEpochs, in the same words.
func TestReadmeSaysTheSyntheticLength(t *testing.T) {
	words := map[float64]string{1: "one epoch", 2: "two epochs", 3: "three epochs"}
	want, ok := words[nb.SyntheticEpochs]
	require.True(t, ok, "nb.SyntheticEpochs %g: add its words here", nb.SyntheticEpochs)

	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	var row string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| 8 |") {
			row = line
		}
	}
	require.NotEmpty(t, row, "README.md has no row for notebook 08")
	require.Contains(t, row, "else "+want+" of the synthetic stand-in")
	for w := range words {
		if words[w] != want {
			require.NotContains(t, row, words[w]+" of the synthetic", "README.md's row of notebook 08")
		}
	}

	var markdown strings.Builder
	for _, c := range readNotebook(t, "08-real-baseline.ipynb").Cells {
		if c.CellType == "markdown" {
			markdown.WriteString(strings.Join(c.Source, ""))
		}
	}
	require.Contains(t, markdown.String(), fmt.Sprintf("it trains for %s only", want), "notebook 08's data paragraph")
}
