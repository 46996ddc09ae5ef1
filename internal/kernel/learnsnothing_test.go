package kernel

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/compilecache"
	"github.com/stretchr/testify/require"
)

// TestCellSaysTheRunLearnsNothing runs, through the real CPU kernel, a cell that trains a run
// with the lookahead for 3 steps, which ends on its initial weights (training's lookahead first
// averages at step 5): the cell says so before the first step, with the fix; the runs table of a
// later cell marks its test accuracy as chance level; and the cell's time says what it leaves out
// (GoNB's Go build) and how much of it was XLA compilation.
func TestCellSaysTheRunLearnsNothing(t *testing.T) {
	t.Setenv(compilecache.DirEnv, "off") // its cell time says how much was XLA compilation: no program of another test is loaded
	repo := testRepo(t)
	jupyterDir := installKernels(t, repo)
	dir := t.TempDir()
	cells := []string{
		"import (\n\t\"github.com/cifarlab/cifarlab/cifarlib/data\"\n\t\"github.com/cifarlab/cifarlab/cifarlib/nb\"\n" +
			")\n\nvar lab = nb.Open(data.CIFAR10())\n\n%%\nfmt.Println(lab.Arch)",
		"%%\ndefer nb.CellTime()\ns := lab.Settings()\ns.Run.Steps, s.Data.BatchSize, s.Run.Seed, s.Run.Lookahead, s.Record.LogEvery = 3, 32, 1, true, 1\n" +
			"res := nb.Must(lab.Fit(\"short\", s))\n" +
			"fmt.Println(\"warnings:\", len(res.Warnings))",
		"%%\nfmt.Println(nb.Must(lab.Runs()))",
	}
	out := runCells(t, repo, jupyterDir, dir, "interrupt_cells.py", []string{CPUKernel, "-1", ""}, cells...)
	res := cellResults(t, out, len(cells))
	for i, c := range res {
		require.Equal(t, "ok", c.Status, "cell %d: %s", i, c.Text)
	}
	fit := res[1].Text
	warning := `WARNING: run "short": this run learns nothing: with the lookahead on, a run of 3 steps ends on its initial weights ` +
		`(the lookahead first averages the weights at step 5 and the run ends on that average); train at least 5 steps ` +
		`(more epochs, or a smaller batch), or turn the lookahead off (Run.Lookahead false, the setting lookahead=false)`
	require.Contains(t, fit, warning)
	require.Less(t, strings.Index(fit, warning), strings.Index(fit, "step 1/3"), "said before the first step")
	require.Contains(t, fit, "warnings: 1\n")
	require.Regexp(t, `\(cell time [0-9.]+s including [0-9.]+s of XLA compilation; excluded: GoNB's Go build of the cell\)\n`, fit)

	var row string
	for _, line := range strings.Split(res[2].Text, "\n") {
		if strings.HasPrefix(line, "short ") {
			row = line
		}
	}
	require.NotEmpty(t, row, res[2].Text)
	require.Regexp(t, regexp.MustCompile(`\d+\.\d\d% \(chance\)`), row)
	require.Contains(t, row, "test accuracy at chance level (1/10 = 10.00% ± 2.85 points on 1000 test images): the run learned nothing")
	require.FileExists(t, filepath.Join(dir, "data", "runs", "short", "run.json"))
}
