package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/training"

	"github.com/stretchr/testify/require"
)

// TestNoFlagWordsInCifarlib: the flags of the settings are cmd's words: no string of cifarlib's
// code says a setting as a flag (--lr, -backend), whatever the setting's row (training.Fields);
// the library names a setting by its Settings field and its name (lr=0.1), and cmd says it as
// a flag (the help from the rows, errors through inFlags). Two kinds of string are not a
// setting said as a flag: a command line of cifarlab's data commands (download, synth, verify)
// that the library tells the user to run, with those commands' own flags, and an argument of a
// command the library runs (exactly "--data"). It fails at f035eac: the table's usages, the
// transfer errors' InFlags, the recipe's warning, backends' hints and others said flags.
func TestNoFlagWordsInCifarlib(t *testing.T) {
	names := strings.Join(training.FieldNames(), "|")
	flagWord := regexp.MustCompile(`(^|[^-\w])--?(` + names + `)\b`)
	dataCommand := regexp.MustCompile("cifarlab (download|synth|verify) [^`;]*")
	var found []string
	root := filepath.Join("..", "..", "cifarlib")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || flagWord.FindString(s) == "--"+strings.TrimLeft(s, "-") && strings.HasPrefix(s, "--") && !strings.Contains(s, " ") {
				return true // an argument of a command the library runs
			}
			if m := flagWord.FindString(dataCommand.ReplaceAllString(s, "")); m != "" {
				found = append(found, fset.Position(lit.Pos()).String()+": "+strings.TrimSpace(m)+" in "+lit.Value)
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, found, "settings said as flags in cifarlib:\n%s", strings.Join(found, "\n"))
}
