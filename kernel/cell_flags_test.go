package kernel

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKernelSpecLinkFlags(t *testing.T) {
	spec := NewKernelSpec(Repo{Dir: "/repo"}, "cpu", "/go/bin", Backend{GoMLX: "go"})
	require.Equal(t, "-buildvcs=false '-ldflags=-s -linkmode=internal'", spec.Env["GOFLAGS"])
}

// TestPanickingCellNamesItsLine runs kernel/testdata/panic.ipynb through the real CPU kernel:
// a cell that links cifarlib with CellLinkFlags runs, and its panic's stack trace still names
// the cell and the lines (GoNB maps them from the runtime's pclntab, which -s keeps).
func TestPanickingCellNamesItsLine(t *testing.T) {
	repo := testRepo(t)
	dataDir := installKernels(t, repo)
	run := runNotebook(t, repo, dataDir, filepath.Join(repo.Dir, "kernel", "testdata", "panic.ipynb"), CPUKernel)
	require.Len(t, run.Cells, 1)
	c := run.Cells[0]
	require.Equal(t, "error", c.Status, "%+v", c)
	require.Equal(t, "10\n", c.Stdout, "the cell linked and ran up to the panic")
	require.Contains(t, c.Stderr, "panic: runtime error: index out of range [57] with length 0")
	// The trace has the file and line of each frame (the pclntab): classOf's `return labels[i]`
	// (main.go line 10, the cell's line 4) and the call in the cell's body (17, the cell's 9).
	require.Regexp(t, `main\.classOf\(\.\.\.\)\n\t.*/main\.go:10\n`, c.Stderr)
	require.Regexp(t, `main\.main\(\)\n\t.*/main\.go:17 `, c.Stderr)
	// GoNB maps them to the cell's lines in its error report (HTML), which it builds from whole
	// lines of stderr. (The inline "[[ Cell [1] Line 4 ]]" marks in the stream itself come from
	// matching each chunk the pipe delivers on its own, and the runtime writes a frame's file,
	// ':' and line separately: under load a reference is split and stays unmarked, so those
	// marks cannot be required.)
	require.Contains(t, c.Text, "Cell[1]: Line 4", "classOf's return, in the error report: %q", c.Text)
	require.Contains(t, c.Text, "Cell[1]: Line 9", "the call in the cell's body, in the error report: %q", c.Text)
}
