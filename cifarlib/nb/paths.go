package nb

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// shownPath is path as a cell prints it: a path in the data folder that $CIFARLAB_DATA names
// (the notebooks' data, with their runs) is written $CIFARLAB_DATA/..., so that a notebook's
// outputs do not carry one machine's absolute paths; any other path is printed as it is.
func shownPath(path string) string {
	root := shownRoot()
	if root == "" || !filepath.IsAbs(path) {
		return path
	}
	rel, err := filepath.Rel(root, path)
	switch {
	case err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)):
		return path
	case rel == ".":
		return "$" + data.DirEnv
	}
	return "$" + data.DirEnv + "/" + filepath.ToSlash(rel)
}

// shownText is a report's text as a cell prints it: every path in the data folder that
// $CIFARLAB_DATA names is written $CIFARLAB_DATA/..., as shownPath writes one path, for the
// reports the library words with the paths it was given (Diagnosis, a training summary).
func shownText(text string) string {
	root := shownRoot()
	if root == "" {
		return text
	}
	return strings.ReplaceAll(text, root+string(filepath.Separator), "$"+data.DirEnv+"/")
}

// shownRoot is the data folder that $CIFARLAB_DATA names, cleaned, or "" when it names no
// absolute folder (then paths are printed as they are).
func shownRoot() string {
	root := os.Getenv(data.DirEnv)
	if !filepath.IsAbs(root) {
		return ""
	}
	return filepath.Clean(root)
}
