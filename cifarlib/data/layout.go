package data

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Layout is the on-disk form of a CIFAR dataset: the binary distribution (cifar-10-batches-bin,
// cifar-100-binary) or the Python pickles that torchvision and Keras download
// (cifar-10-batches-py, cifar-100-python). LoadSplit, Verify and Prepare detect it.
type Layout int

const (
	// LayoutBinary is the binary distribution: fixed-size records of label bytes and pixels.
	LayoutBinary Layout = iota
	// LayoutPython is the Python distribution: one pickled dict per batch (data_batch_1..5,
	// test_batch and batches.meta for CIFAR-10; train, test and meta for CIFAR-100).
	LayoutPython
)

// String returns "binary" or "python".
func (l Layout) String() string {
	switch l {
	case LayoutBinary:
		return "binary"
	case LayoutPython:
		return "python"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// ParseLayout parses "binary" (or "bin", "") and "python" (or "py", "pickle").
func ParseLayout(s string) (Layout, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "binary", "bin":
		return LayoutBinary, nil
	case "python", "py", "pickle":
		return LayoutPython, nil
	}
	return LayoutBinary, fmt.Errorf("data: unknown data format %q: use \"binary\" or \"python\"", s)
}

// pythonLayout holds the Python distribution's folder, files and archive of one dataset.
type pythonLayout struct {
	dir                   string
	trainFiles, testFiles []string
	meta                  string
	archiveURL, archive   string
	archiveSHA256         string
	// md5 pins each file as torchvision does (torchvision.datasets.CIFAR10/100 check these
	// sums); Verify accepts a folder torchvision downloaded, which has no cifarlab marker, by them.
	md5 map[string]string
}

var pythonLayouts = map[string]pythonLayout{
	"cifar10": {
		dir:           "cifar-10-batches-py",
		trainFiles:    []string{"data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5"},
		testFiles:     []string{"test_batch"},
		meta:          "batches.meta",
		archiveURL:    "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
		archive:       "cifar-10-python.tar.gz",
		archiveSHA256: "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
		md5: map[string]string{
			"data_batch_1": "c99cafc152244af753f735de768cd75f",
			"data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
			"data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
			"data_batch_4": "634d18415352ddfa80567beed471001a",
			"data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
			"test_batch":   "40351d587109b95175f43aff81a1287e",
			"batches.meta": "5ff9c542aee3614f3951f8cda6e48888",
		},
	},
	"cifar100": {
		dir:           "cifar-100-python",
		trainFiles:    []string{"train"},
		testFiles:     []string{"test"},
		meta:          "meta",
		archiveURL:    "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
		archive:       "cifar-100-python.tar.gz",
		archiveSHA256: "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7",
		md5: map[string]string{
			"train": "16019d7e3df5f24257cddd939b257f8d",
			"test":  "f0ef6b0ae62326f3e7ffdfab6717acfc",
			"meta":  "7973b15100ade9c7d40fb424638fde48",
		},
	},
}

// InLayout returns the spec with the folder, file names and archive (URL, name, SHA-256) of
// the given layout; everything else (classes, sizes, statistics) is unchanged. Download uses
// it for DownloadOptions.Layout; records always carry the binary spec.
func (s Spec) InLayout(l Layout) Spec {
	var base Spec // the binary layout's folder, files and archive, which no label set changes
	switch s.Name {
	case "cifar10":
		base = CIFAR10()
	case "cifar100":
		base = CIFAR100(LabelsFine)
	default:
		return s
	}
	if l == LayoutPython {
		p := pythonLayouts[s.Name]
		base.Dir, base.TrainFiles, base.TestFiles = p.dir, p.trainFiles, p.testFiles
		base.ArchiveURL, base.ArchiveName, base.ArchiveSHA256 = p.archiveURL, p.archive, p.archiveSHA256
	}
	s.Dir = base.Dir
	s.TrainFiles = append([]string(nil), base.TrainFiles...)
	s.TestFiles = append([]string(nil), base.TestFiles...)
	s.ArchiveURL, s.ArchiveName, s.ArchiveSHA256 = base.ArchiveURL, base.ArchiveName, base.ArchiveSHA256
	return s
}

// Layout returns the layout the spec's folder belongs to (LayoutPython after InLayout(LayoutPython)).
func (s Spec) Layout() Layout {
	if p, ok := pythonLayouts[s.Name]; ok && s.Dir == p.dir {
		return LayoutPython
	}
	return LayoutBinary
}

// MetaFile returns the file holding the class names, relative to the spec's folder: the
// Python layout's batches.meta or meta ("" for the binary layout, whose names are text files).
func (s Spec) MetaFile() string {
	if s.Layout() == LayoutPython {
		return pythonLayouts[s.Name].meta
	}
	return ""
}

// DetectLayout says which layout root holds for spec: LayoutBinary when root has the binary
// folder (cifar-10-batches-bin, cifar-100-binary), else LayoutPython when it has the Python
// folder (cifar-10-batches-py, cifar-100-python). When both exist the binary one wins. When
// neither exists it returns LayoutBinary and an error wrapping fs.ErrNotExist that names both.
func DetectLayout(root string, spec Spec) (Layout, error) {
	if err := checkSpec(spec); err != nil {
		return LayoutBinary, err
	}
	layout, _, err := detectLayout(root, spec)
	return layout, err
}

// detectLayout is DetectLayout for a spec already checked; in is spec in the layout found
// (Spec.InLayout), or spec itself when it names that layout's folder already (its own files
// and checksums, as Verify and LoadSplit read them).
func detectLayout(root string, spec Spec) (layout Layout, in Spec, err error) {
	bin, py := spec.InLayout(LayoutBinary), spec.InLayout(LayoutPython)
	switch layout, in = LayoutBinary, bin; {
	case isDir(filepath.Join(root, bin.Dir)):
	case py.Dir != bin.Dir && isDir(filepath.Join(root, py.Dir)):
		layout, in = LayoutPython, py
	default:
		return LayoutBinary, bin, fmt.Errorf("data: %s: no %s data: neither %s/ (binary layout) nor %s/ (python layout, as torchvision "+
			"downloads it) is there: run `cifarlab download --dataset %s --data %s` (add --format python for the pickles): %w",
			root, spec.Name, bin.Dir, py.Dir, spec.Name, root, fs.ErrNotExist)
	}
	if in.Dir == spec.Dir {
		in = spec
	}
	return layout, in, nil
}

// Locate returns the folder LoadSplit reads spec from under root, and its layout (see
// DetectLayout; the binary folder when there is none).
func Locate(root string, spec Spec) (dir string, layout Layout) {
	layout, _ = DetectLayout(root, spec)
	return filepath.Join(root, spec.InLayout(layout).Dir), layout
}

// isDir reports whether path is a directory (following links, as the data folders may be links).
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

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
