package labproc

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

// sourceRoots are the folders of the checkout whose Go code a cell links, with go.mod and go.sum
// (the versions of GoMLX and every other dependency).
var sourceRoots = []string{"cifarlib", "internal"}

// Fingerprint identifies the library code a cell of the checkout repoDir is built from: a hash of
// the Go version, this program's build tags and cgo setting, and of every non-test .go file under cifarlib/ and internal/ (path and
// contents), go.mod and go.sum. GoNB builds cells against the checkout's working tree (its
// --go_work), so editing a library file, or pulling a new version, changes it; a lab process of
// another fingerprint is never used. Tests and testdata are left out: a cell does not link them.
func Fingerprint(repoDir string) (string, error) {
	if repoDir == "" {
		return "", fmt.Errorf("labproc: no cifarlab checkout to fingerprint (set $CIFARLAB_REPO)")
	}
	h := sha256.New()
	fmt.Fprintf(h, "go %s\n", runtime.Version())
	if info, ok := debug.ReadBuildInfo(); ok { // the build tags: a cell built with others links other code
		for _, s := range info.Settings {
			if s.Key == "-tags" || s.Key == "CGO_ENABLED" {
				fmt.Fprintf(h, "%s=%s\n", s.Key, s.Value)
			}
		}
	}
	add := func(rel string) error {
		f, err := os.Open(filepath.Join(repoDir, rel))
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\n", filepath.ToSlash(rel))
		n, err := io.Copy(h, f)
		fmt.Fprintf(h, "\n%d\n", n)
		return err
	}
	for _, rel := range []string{"go.mod", "go.sum"} {
		if err := add(rel); err != nil {
			return "", fmt.Errorf("labproc: fingerprinting the library code: %w", err)
		}
	}
	for _, root := range sourceRoots {
		err := filepath.WalkDir(filepath.Join(repoDir, root), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				return nil
			}
			rel, err := filepath.Rel(repoDir, path)
			if err != nil {
				return err
			}
			return add(rel)
		})
		if err != nil {
			return "", fmt.Errorf("labproc: fingerprinting the library code: %w", err)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
