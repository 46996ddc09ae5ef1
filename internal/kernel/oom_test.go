package kernel

import (
	"regexp"
	"testing"

	"github.com/cifarlab/cifarlab/internal/oomkill"
	"github.com/cifarlab/cifarlab/internal/oomkill/oomtest"
	"github.com/stretchr/testify/require"
)

// TestOutOfMemoryInCell runs the real CPU kernel in a memory cgroup of 2.5 GiB (as a container
// of that limit would): a cell that touches 4 GiB is ended by the kernel's out-of-memory killer,
// and GoNB says only "signal: killed"; the next cell begins with what happened (memory ran out,
// the limit) and what to do; the one after says nothing more.
func TestOutOfMemoryInCell(t *testing.T) {
	repo := testRepo(t)
	jupyterDir := installKernels(t, repo)
	const limit = 5 << 29 // 2.5 GiB: the kernel, gopls and a cell's build fit; 4 GiB does not
	dir := oomtest.Cgroup(t, limit)
	oomtest.Visit(t, dir)
	cells := []string{
		"import (\n\t\"fmt\"\n\n\t\"github.com/cifarlab/cifarlab/cifarlib/nb\"\n)\n\nvar _ = nb.InNotebook\n\n" +
			"%%\nfmt.Println(\"ready\")",
		"%%\nb := make([]byte, 4<<30)\nfor i := 0; i < len(b); i += 4096 {\n\tb[i] = 1\n}\nfmt.Println(\"did not run out\", len(b))",
		"%%\nfmt.Println(\"next cell\")",
		"%%\nfmt.Println(\"and the one after\")",
	}
	out := runCells(t, repo, jupyterDir, t.TempDir(), "interrupt_cells.py", []string{CPUKernel, "-1", ""}, cells...)
	res := cellResults(t, out, len(cells))
	require.Equal(t, "ok", res[0].Status, res[0].Text)
	require.Equal(t, "error", res[1].Status, "the cell that ran out: %s", res[1].Text)
	require.Contains(t, res[1].Text, "signal: killed")
	require.NotContains(t, res[1].Text, "did not run out")

	require.Equal(t, "ok", res[2].Status, res[2].Text)
	require.Regexp(t, `^`+regexp.QuoteMeta("nb: memory ran out (limit 2.5 GiB, memory cgroup "+dir+": 1 out-of-memory kill) "+
		"since this notebook's previous cell began")+`.*`+regexp.QuoteMeta(`if the previous cell ended with "signal: killed", it was that cell's program. To go on, `+
		oomkill.Advice)+"\nnext cell\n$", res[2].Text)
	require.Equal(t, "and the one after\n", res[3].Text, "told once")
}
