package data

import (
	"fmt"
	"os"
	"path/filepath"
)

// FolderItselfError reports a data folder that is the dataset's folder itself (it holds the
// split files: cifar-10-batches-bin's data_batch_1.bin, cifar-10-batches-py's data_batch_1, …)
// where the folder that holds it was expected: Parent is the folder to give instead. Reading,
// downloading or synthesizing into Given would look for, or write, a folder one level too deep.
type FolderItselfError struct {
	// Dataset is the dataset's name, Folder its folder's name in that layout
	// ("cifar-10-batches-bin"), Layout the layout the files are in.
	Dataset, Folder string
	Layout          Layout
	// Given is the data folder given, Parent the one that holds it.
	Given, Parent string
}

// Error implements error.
func (e *FolderItselfError) Error() string {
	return fmt.Sprintf("data: %s is the %s folder itself (its files are there, in the %s layout), not the folder that holds %s/: "+
		"use the data folder %s (or set %s=%s)", e.Given, e.Dataset, e.Layout, e.Folder, e.Parent, DirEnv, e.Parent)
}

// folderItself returns a *FolderItselfError when root holds no dataset folder for spec but is
// such a folder itself (it holds the first training or test file of either layout); nil
// otherwise.
func folderItself(root string, spec Spec) *FolderItselfError {
	if _, _, err := detectLayout(root, spec); err == nil {
		return nil
	}
	for _, l := range []Layout{LayoutBinary, LayoutPython} {
		in := spec.InLayout(l)
		for _, files := range [][]string{in.TrainFiles, in.TestFiles} {
			if len(files) == 0 {
				continue
			}
			if fi, err := os.Stat(filepath.Join(root, files[0])); err == nil && fi.Mode().IsRegular() {
				abs, err := filepath.Abs(root)
				if err != nil {
					abs = root
				}
				return &FolderItselfError{Dataset: spec.Name, Folder: in.Dir, Layout: l, Given: root, Parent: filepath.Dir(abs)}
			}
		}
	}
	return nil
}
