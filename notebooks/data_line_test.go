package notebooks_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCommittedDataSaysWhy: a committed notebook whose outputs come from synthetic data says why
// that serves its point, in the first line under its title ("*Data: synthetic CIFAR-100, and
// that is enough here: ...*"), naming each synthetic dataset its metadata lists; one whose
// outputs are all from real data needs no such line. So a reader of GitHub's rendering knows
// what its accuracies are worth before reading them (issue 48), and notebook 08, whose point is
// the accuracy, must be committed from a real run.
func TestCommittedDataSaysWhy(t *testing.T) {
	display := map[string]string{"cifar10": "CIFAR-10", "cifar100": "CIFAR-100"}
	for _, name := range wantNotebooks {
		doc := readNotebook(t, name)
		require.NotEmpty(t, doc.Cells, name)
		require.Equal(t, "markdown", doc.Cells[0].CellType, name)
		lines := doc.Cells[0].Source
		require.GreaterOrEqual(t, len(lines), 3, name)
		why := strings.TrimSpace(lines[2])

		var synthetic []string
		require.NotEmpty(t, doc.Metadata.Cifarlab.Data, "%s: its metadata names no data (regenerate it with notebooks/regenerate.sh)", name)
		for _, line := range doc.Metadata.Cifarlab.Data {
			dataset, kind, ok := strings.Cut(line, ": ")
			require.True(t, ok, "%s: data line %q", name, line)
			if strings.HasPrefix(kind, "synthetic") {
				require.Contains(t, display, dataset, name)
				synthetic = append(synthetic, display[dataset])
			}
		}
		if len(synthetic) == 0 {
			require.False(t, strings.HasPrefix(why, "*Data: synthetic"), "%s: its outputs are from real data, but its first line says synthetic", name)
			continue
		}
		require.True(t, strings.HasPrefix(why, "*Data: ") && strings.Contains(why, "that is enough here"),
			"%s: its outputs are from synthetic %s, and the line under its title does not say why that serves its point:\n%s",
			name, strings.Join(synthetic, " and "), why)
		for _, ds := range synthetic {
			require.Contains(t, why, ds, "%s: its first line does not name synthetic %s", name, ds)
		}
	}
}
