package layers

import (
	"cmp"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/repo"
	"github.com/stretchr/testify/require"
)

// maxFuncLines is the most lines a non-test function of the module may have, from its func
// keyword to its closing brace.
const maxFuncLines = 60

// TestFunctionsAreShort: every non-test function of the module's packages (their Go files, those
// a build tag leaves out included) is at most maxFuncLines lines; the failure lists the others,
// longest first, to split into named steps.
func TestFunctionsAreShort(t *testing.T) {
	var long []longFunc
	for _, pkg := range listPackages(t, "./...") {
		for _, f := range pkg.sources() {
			long = append(long, longFuncs(t, filepath.Join(pkg.Dir, f))...)
		}
	}
	if len(long) > 0 {
		slices.SortFunc(long, func(a, b longFunc) int { return cmp.Or(b.lines-a.lines, strings.Compare(a.key, b.key)) })
		var lines []string
		for _, fn := range long {
			lines = append(lines, fn.String())
		}
		t.Errorf("%d functions over %d lines: split each into named steps\n%s", len(long), maxFuncLines, strings.Join(lines, "\n"))
	}
}

// goPackage is a package of the module as `go list` says it: its folder, import path and Go
// files.
type goPackage struct {
	Dir, ImportPath                   string
	GoFiles, CgoFiles, IgnoredGoFiles []string
}

// sources are the package's non-test Go files, those a build tag leaves out included.
func (p goPackage) sources() []string {
	var out []string
	for _, f := range slices.Concat(p.GoFiles, p.CgoFiles, p.IgnoredGoFiles) {
		if strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") {
			out = append(out, f)
		}
	}
	return out
}

// listPackages lists the module's packages that pattern matches (go list, from the module's root).
func listPackages(t *testing.T, pattern string) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=Dir,ImportPath,GoFiles,CgoFiles,IgnoredGoFiles", pattern)
	cmd.Dir = repo.Dir()
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", out)
	var pkgs []goPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var pkg goPackage
		require.NoError(t, dec.Decode(&pkg))
		pkgs = append(pkgs, pkg)
	}
	return pkgs
}

// longFunc is a function over maxFuncLines: key is "FILE:NAME" (FILE from the module's root,
// NAME Type.Method for a method).
type longFunc struct {
	key   string
	line  int
	lines int
}

func (f longFunc) String() string {
	file, name, _ := strings.Cut(f.key, ":")
	return fmt.Sprintf("%4d lines: %s:%d %s", f.lines, file, f.line, name)
}

// longFuncs parses one Go file and returns its functions over maxFuncLines.
func longFuncs(t *testing.T, path string) []longFunc {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	rel, err := filepath.Rel(repo.Dir(), path)
	require.NoError(t, err)
	var out []longFunc
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start, end := fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
		if n := end - start + 1; n > maxFuncLines {
			out = append(out, longFunc{key: filepath.ToSlash(rel) + ":" + funcName(fd), line: start, lines: n})
		}
	}
	return out
}

// funcName is a function's name, Type.Method for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}
