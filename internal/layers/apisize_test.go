package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxTrainingExports bounds the exported names of package training and its packages together
// (issue 56 item 4: fewer than the 205 of f035eac, counted as exportedNames counts).
const maxTrainingExports = 204

// TestTrainingAPIIsSmall: training, optimizers and checkpoints export at most maxTrainingExports
// names together: their exported functions, types, vars and consts, and the exported methods
// of their exported types (non-test files). The failure lists them, to make one the package's
// own where no caller outside needs it. At f035eac, training alone exported 205.
func TestTrainingAPIIsSmall(t *testing.T) {
	var names []string
	for _, pkg := range listPackages(t, "./cifarlib/training/...") {
		for _, f := range pkg.sources() {
			names = append(names, exportedNames(t, filepath.Join(pkg.Dir, f))...)
		}
	}
	sort.Strings(names)
	require.LessOrEqual(t, len(names), maxTrainingExports, "exported names of training and its packages:\n%s", strings.Join(names, "\n"))
}

// exportedNames lists the exported names a Go file declares: funcs, types, vars, consts, and
// the exported methods of its exported types ("Type.Method"), each with its package's name.
func exportedNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	pkg := f.Name.Name + "."
	var names []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if name, ok := exportedFuncName(d); ok {
				names = append(names, pkg+name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						names = append(names, pkg+s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							names = append(names, pkg+n.Name)
						}
					}
				}
			}
		}
	}
	return names
}

// exportedFuncName is the name of an exported function, or "Type.Method" of an exported method of an
// exported type; false for the others.
func exportedFuncName(d *ast.FuncDecl) (string, bool) {
	if !d.Name.IsExported() {
		return "", false
	}
	if d.Recv == nil {
		return d.Name.Name, true
	}
	recv := d.Recv.List[0].Type
	if star, ok := recv.(*ast.StarExpr); ok {
		recv = star.X
	}
	if index, ok := recv.(*ast.IndexExpr); ok {
		recv = index.X
	}
	id, ok := recv.(*ast.Ident)
	return id.Name + "." + d.Name.Name, ok && id.IsExported()
}
