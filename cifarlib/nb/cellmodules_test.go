package nb

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReportCellModules: a cell says, once per kernel, which version it got of a module the
// checkout does not require and of a module of go.mod at another version; go.mod's versions,
// the checkout itself and replaced modules go unsaid, and so does everything outside a kernel.
func TestReportCellModules(t *testing.T) {
	repo, kernelDir := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module github.com/cifarlab/cifarlab\n\ngo 1.27\n\n"+
		"require (\n\tgithub.com/gomlx/gomlx v0.28.16\n\tgithub.com/nlpodyssey/gopickle v0.2.0 // indirect\n)\n"), 0o644))
	deps := []*debug.Module{
		{Path: "github.com/cifarlab/cifarlab", Version: "(devel)"},
		{Path: "github.com/gomlx/gomlx", Version: "v0.28.16"},
		{Path: "github.com/nlpodyssey/gopickle", Version: "v0.2.1"},
		{Path: "example.com/fresh", Version: "v1.0.0"},
		{Path: "example.com/mine", Version: "v1.0.0", Replace: &debug.Module{Path: "../mine"}},
	}
	var out strings.Builder
	reportCellModules(&out, deps, repo, kernelDir)
	require.Equal(t, "cifarlab: this kernel's cells build with github.com/nlpodyssey/gopickle v0.2.1, not go.mod's v0.2.0 "+
		"(a `go get` in the notebook, or a module that requires it): results may differ from the tests' and the CLI's; `cifarlab doctor` says which kernel\n"+
		"cifarlab: this kernel's cells also build with example.com/fresh v1.0.0, which the checkout's go.mod does not require "+
		"(the newest version the module cache or proxy had)\n", out.String())

	out.Reset()
	reportCellModules(&out, deps, repo, kernelDir)
	require.Empty(t, out.String(), "said once per kernel")
	reportCellModules(&out, append(deps, &debug.Module{Path: "example.com/fresh", Version: "v1.1.0"}), repo, kernelDir)
	require.Contains(t, out.String(), "example.com/fresh v1.1.0", "a new version is said again")

	out.Reset()
	reportCellModules(&out, deps, repo, "")
	reportCellModules(&out, deps, "", kernelDir)
	reportCellModules(&out, deps, t.TempDir(), t.TempDir()) // no go.mod
	require.Empty(t, out.String(), "nothing outside a cifarlab kernel")
}
