package data

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// splitFileRecords returns the number of records file k of nFiles of a split has.
func splitFileRecords(splitSize, nFiles, k int) int {
	return (k+1)*splitSize/nFiles - k*splitSize/nFiles
}

// loadPythonSplit is LoadSplit for the Python layout: it reads the class names from the
// meta file and the batches of the split, in the official order. The pixel buffer is sized
// from the file sizes before anything is decoded (a pickle holds at least its pixels), and
// the lexer reads each batch's pixel data straight into it: decoding copies no batch.
func loadPythonSplit(root string, spec Spec, split Split) (*Records, error) {
	py := spec.InLayout(LayoutPython)
	dir := filepath.Join(root, py.Dir)
	files := split.Files(py)
	missing := func(path string, err error) error {
		return fmt.Errorf("data: %s %s split (python layout): file %s is missing: run "+
			"`cifarlab download --dataset %s --format python --data %s` (or give as the data folder the one holding %s/): %w",
			spec.Name, split, path, spec.Name, root, py.Dir, err)
	}
	metaPath := filepath.Join(dir, py.MetaFile())
	names, err := readPickleMetaFile(metaPath, spec)
	if errors.Is(err, os.ErrNotExist) {
		return nil, missing(metaPath, err)
	}
	if err != nil {
		return nil, err
	}
	sizes, capacity, err := pickleFileSizes(dir, files, spec, split, missing)
	if err != nil {
		return nil, err
	}
	out := spec.InLayout(LayoutBinary)
	out.ClassNames = names
	source := filepath.Join(dir, files[0])
	if len(files) > 1 {
		source = fmt.Sprintf("%s/{%s..%s}", dir, files[0], files[len(files)-1])
	}
	recs := &Records{Spec: out, Source: source,
		Pixels:    make([]byte, 0, capacity*ImageBytes),
		RawLabels: make([]byte, 0, capacity*int64(out.LabelBytes))}
	for k, name := range files {
		path := filepath.Join(dir, name)
		part := &Records{Spec: out, Source: path, Pixels: recs.Pixels, RawLabels: recs.RawLabels}
		alloc := func(n int) []byte {
			if len(part.Pixels)+n <= cap(part.Pixels) {
				return part.Pixels[len(part.Pixels) : len(part.Pixels)+n]
			}
			return make([]byte, n)
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("data: opening %s data file: %w", spec.Name, err)
		}
		err = readPickleInto(f, sizes[k], part, alloc)
		f.Close()
		if err != nil {
			return nil, err
		}
		recs.Pixels, recs.RawLabels = part.Pixels, part.RawLabels
	}
	return recs, nil
}

// pickleFileSizes are the sizes of the split's files in dir, and the records they can hold
// at most (a pickle holds at least its pixels); a missing file is missing's error.
func pickleFileSizes(dir string, files []string, spec Spec, split Split, missing func(string, error) error) ([]int64, int64, error) {
	sizes := make([]int64, len(files))
	var capacity int64
	for k, name := range files {
		path := filepath.Join(dir, name)
		fi, err := os.Stat(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, 0, missing(path, err)
			}
			return nil, 0, fmt.Errorf("data: %s %s split: %w", spec.Name, split, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, 0, fmt.Errorf("data: %s %s split: %s is not a regular file", spec.Name, split, path)
		}
		sizes[k] = fi.Size()
		capacity += min(fi.Size(), maxPickleFileBytes) / ImageBytes
	}
	return sizes, capacity, nil
}

// pythonArchiveFiles maps the files of a Python-layout archive to the largest size accepted,
// as a negative number (extractTar's convention for "at most").
func pythonArchiveFiles(spec Spec) map[string]int64 {
	files := map[string]int64{spec.MetaFile(): -(1 << 20)}
	for _, name := range append(append([]string(nil), spec.TrainFiles...), spec.TestFiles...) {
		files[name] = -maxPickleFileBytes
	}
	return files
}

// checkPythonStaging decodes every extracted file of a Python-layout archive before it is
// installed: each batch must hold its share of the split's records, with valid labels.
func checkPythonStaging(staging string, spec Spec) error {
	for _, split := range []Split{SplitTrain, SplitTest} {
		files := split.Files(spec)
		for k, name := range files {
			source := spec.ArchiveName + ":" + spec.Dir + "/" + name
			f, size, err := openPickle(filepath.Join(staging, name), spec)
			if err != nil {
				return err
			}
			recs, err := readPickle(f, size, source, spec)
			f.Close()
			if err != nil {
				return err
			}
			if want := splitFileRecords(split.Size(spec), len(files), k); recs.Len() != want {
				return &PickleError{File: source, Offset: -1, Record: -1, Key: "data", Value: fmt.Sprintf("%d records", recs.Len()),
					Kind: ErrPickleLayout, Reason: fmt.Sprintf("the %s archive's file has %d records: it is not the official archive: "+
						"delete it and download again", spec.Name, want)}
			}
		}
	}
	f, size, err := openPickle(filepath.Join(staging, spec.MetaFile()), spec)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = readPickleMeta(f, size, spec.ArchiveName+":"+spec.Dir+"/"+spec.MetaFile(), spec)
	return err
}
