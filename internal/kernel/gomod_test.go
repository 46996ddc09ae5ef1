package kernel

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseGoMod(t *testing.T) {
	src := `// header comment
module github.com/cifarlab/cifarlab/tools

go 1.26.0

toolchain go1.27.3

tool (
	github.com/janpfeifer/gonb
	golang.org/x/tools/cmd/goimports // comment
)

tool golang.org/x/tools/gopls

require github.com/janpfeifer/gonb v0.11.4

require (
	golang.org/x/tools v0.47.1-0.20260707181000-a299dadba899 // indirect
	"golang.org/x/tools/gopls" v0.23.0
)

replace example.com/a => ../a
`
	mod, err := parseGoMod("go.mod", []byte(src))
	require.NoError(t, err)
	require.Equal(t, &goMod{
		Module:    "github.com/cifarlab/cifarlab/tools",
		Go:        "1.26.0",
		Toolchain: "go1.27.3",
		Require: map[string]string{
			"github.com/janpfeifer/gonb": "v0.11.4",
			"golang.org/x/tools":         "v0.47.1-0.20260707181000-a299dadba899",
			"golang.org/x/tools/gopls":   "v0.23.0",
		},
		Tools: []string{"github.com/janpfeifer/gonb", "golang.org/x/tools/cmd/goimports", "golang.org/x/tools/gopls"},
	}, mod)
}

func TestParseGoModErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"no module", "go 1.26\n", "x/go.mod: no module directive"},
		{"bad require", "module m\nrequire a\n", "x/go.mod:2: require needs a module path and a version, got [\"a\"]"},
		{"bad require in block", "module m\nrequire (\n\ta v1 extra\n)\n", "x/go.mod:3: require needs a module path and a version, got [\"a\" \"v1\" \"extra\"]"},
		{"bad go", "module m\ngo\n", "x/go.mod:2: go directive needs one version, got []"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseGoMod("x/go.mod", []byte(tc.src))
			require.EqualError(t, err, tc.want)
		})
	}
}

// The repository's own pins are what the kernels rely on: read them for real.
func TestRepositoryPins(t *testing.T) {
	repo := testRepo(t)
	tools, err := readGoMod(filepath.Join(repo.toolsModDir(), "go.mod"))
	require.NoError(t, err)
	require.Equal(t, "v0.11.5", tools.Require["github.com/janpfeifer/gonb"])
	require.Equal(t, "v0.23.0", tools.Require["golang.org/x/tools/gopls"])
	require.ElementsMatch(t, []string{"github.com/janpfeifer/gonb", "golang.org/x/tools/cmd/goimports", "golang.org/x/tools/gopls"}, tools.Tools)
	main, err := readGoMod(filepath.Join(repo.Dir, "go.mod"))
	require.NoError(t, err)
	require.Equal(t, modulePath, main.Module)
	require.Equal(t, "v0.28.16", main.Require["github.com/gomlx/gomlx"])
	require.Equal(t, "v0.4.13", main.Require["github.com/gomlx/go-xla"])
	require.Equal(t, "v0.1.14", main.Require["github.com/gomlx/compute"])
	require.Equal(t, "1.27", main.Go)
	require.Equal(t, "go1.27.3", main.Toolchain, "the release kernel/toolchain.sh and the kernelspecs export as GOTOOLCHAIN")
}

func TestFindRepo(t *testing.T) {
	repo := testRepo(t)
	got, err := FindRepo(filepath.Join(repo.Dir, "cifarlib"))
	require.Error(t, err, "an explicit folder must itself be the root")
	require.ErrorIs(t, err, errNoRepo)
	require.Equal(t, Repo{}, got)

	got, err = FindRepo(repo.Dir)
	require.NoError(t, err)
	require.Equal(t, repo, got)

	t.Setenv(repoEnv, repo.Dir)
	got, err = FindRepo("")
	require.NoError(t, err)
	require.Equal(t, repo, got)

	t.Setenv(repoEnv, t.TempDir())
	_, err = FindRepo("")
	require.ErrorIs(t, err, errNoRepo)
	require.ErrorContains(t, err, "$CIFARLAB_REPO=")
}

// testRepo is the checkout the tests run in (two folders above internal/kernel).
func testRepo(t *testing.T) Repo {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	dir := filepath.Dir(filepath.Dir(wd))
	require.True(t, isRepo(dir), "%s is not the cifarlab checkout", dir)
	return Repo{Dir: dir}
}
