package data

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/cifarlab/cifarlab/internal/pickle"
	"github.com/nlpodyssey/gopickle/types"
)

// maxPickleBlob bounds the pixel data of one file (100,000 images); maxPickleFileBytes bounds a
// Python-layout file: the official CIFAR-100 train file has 50,000 images (about 155 MB); this
// allows 100,000 with their lists.
const (
	maxPickleBlob      = 100_000 * ImageBytes
	maxPickleFileBytes = maxPickleBlob + 64<<20
)

// decodePickle unpickles r (size bytes) with the safe decoder of internal/pickle and returns
// the top-level dict. alloc provides the buffer the pixel data is read into.
func decodePickle(r io.Reader, size int64, source string, alloc func(n int) []byte) (*types.Dict, error) {
	if size > maxPickleFileBytes {
		return nil, &PickleError{File: source, Offset: -1, Record: -1, Value: fmt.Sprintf("%d bytes", size), Kind: ErrPickleLayout,
			Reason: fmt.Sprintf("file larger than %d bytes: not a CIFAR batch file", int64(maxPickleFileBytes))}
	}
	if size == 0 {
		return nil, &PickleError{File: source, Offset: 0, Record: -1, Kind: ErrNoRecords,
			Reason: "the file is empty; re-download it"}
	}
	v, err := pickle.Decode(r, &pickle.Options{Source: source, Size: size, MaxBlob: maxPickleBlob, ImageBytes: ImageBytes,
		Alloc: alloc, Truncated: ErrTruncated, Layout: ErrPickleLayout, Unsafe: ErrUnsafePickle,
		Fail: func(kind error, offset int64, value, reason string) error {
			return &PickleError{File: source, Offset: offset, Record: -1, Value: value, Kind: kind, Reason: reason}
		}})
	if err != nil {
		return nil, err
	}
	dict, ok := v.(*types.Dict)
	if !ok {
		return nil, &PickleError{File: source, Offset: -1, Record: -1, Value: pickle.ShortValue(v), Kind: ErrPickleLayout,
			Reason: "the pickle is not a dict: a CIFAR batch or meta file is a dict"}
	}
	return dict, nil
}

// pickleKeys returns the entries of a dict by their key (str or bytes), refusing other keys,
// duplicates and keys outside allowed.
func pickleKeys(source string, dict *types.Dict, required, optional []string) (map[string]any, error) {
	allowed := map[string]bool{}
	for _, k := range append(append([]string(nil), required...), optional...) {
		allowed[k] = true
	}
	got := map[string]any{}
	unexpected := ""
	for _, e := range *dict {
		k, ok := pickle.PyString(e.Key)
		if !ok {
			return nil, &PickleError{File: source, Offset: -1, Record: -1, Value: pickle.ShortValue(e.Key), Kind: ErrPickleLayout,
				Reason: "dict key is not a string"}
		}
		if _, dup := got[k]; dup {
			return nil, &PickleError{File: source, Offset: -1, Record: -1, Key: k, Kind: ErrPickleLayout, Reason: "key appears twice"}
		}
		// Report the key that tells what the file is, if there is one.
		if !allowed[k] && (unexpected == "" || keyHint(required, unexpected) == "" && keyHint(required, k) != "") {
			unexpected = k
		}
		got[k] = e.Value
	}
	if unexpected != "" {
		return nil, &PickleError{File: source, Offset: -1, Record: -1, Key: unexpected, Kind: ErrPickleLayout,
			Reason: fmt.Sprintf("unexpected key: this file has the keys %s; want %s%s", dictKeys(dict),
				strings.Join(required, ", "), keyHint(required, unexpected))}
	}
	for _, k := range required {
		if _, ok := got[k]; !ok {
			return nil, &PickleError{File: source, Offset: -1, Record: -1, Key: k, Kind: ErrPickleLayout,
				Reason: fmt.Sprintf("missing key: this file has the keys %s; want %s%s", dictKeys(dict), strings.Join(required, ", "),
					keyHint(required, ""))}
		}
	}
	return got, nil
}

// keyHint explains the usual mix-up: a CIFAR-100 file read as CIFAR-10 or the other way round.
func keyHint(required []string, extra string) string {
	cifar100 := slices.Contains(required, "fine_labels") || slices.Contains(required, "fine_label_names")
	switch {
	case !cifar100 && (strings.HasPrefix(extra, "fine_") || strings.HasPrefix(extra, "coarse_")):
		return " (this is a CIFAR-100 file: use the dataset cifar100, CIFAR100(...))"
	case cifar100 && (extra == "labels" || extra == "label_names"):
		return " (this is a CIFAR-10 file: use the dataset cifar10, CIFAR10())"
	}
	return ""
}

// dictKeys lists the keys of a dict for messages.
func dictKeys(dict *types.Dict) string {
	var keys []string
	for _, e := range *dict {
		keys = append(keys, pickle.ShortValue(e.Key))
	}
	sort.Strings(keys)
	return "[" + strings.Join(keys, ", ") + "]"
}

// pickleLabelKeys returns the label keys of spec's batch files, in RawLabels byte order.
func pickleLabelKeys(spec Spec) []string {
	if spec.LabelBytes == 2 {
		return []string{"coarse_labels", "fine_labels"}
	}
	return []string{"labels"}
}

// readPickle decodes one batch file of the Python layout (data_batch_1..5, test_batch,
// train, test) from r, which holds exactly size bytes (size bounds every length field in
// the pickle, so pass the file's size). It accepts exactly the structure torchvision reads:
// a dict with str or bytes keys, "data" a NumPy uint8 array of shape [N, 3072] rebuilt by
// numpy's _reconstruct, and the labels ("labels" for CIFAR-10, "fine_labels" and
// "coarse_labels" for CIFAR-100) as lists of N ints within the class range; "batch_label"
// and "filenames" may be present. Any global but numpy's array and dtype reconstructors is
// refused, nothing is executed, and the errors are *PickleError values naming the file,
// offset, key, record and value. The pixel data is read once, straight into the returned
// Records.
func readPickle(r io.Reader, size int64, source string, spec Spec) (*Records, error) {
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	recs := &Records{Spec: spec.InLayout(LayoutBinary), Source: source}
	if err := readPickleInto(r, size, recs, func(n int) []byte { return make([]byte, n) }); err != nil {
		return nil, err
	}
	return recs, nil
}

// ReadPickleFile reads a batch file of the Python layout; see readPickle.
func ReadPickleFile(path string, spec Spec) (*Records, error) {
	f, size, err := openPickle(path, spec)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readPickle(f, size, path, spec)
}

// openPickle opens a Python-layout file and returns its size.
func openPickle(path string, spec Spec) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("data: opening %s data file: %w", spec.Name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("data: %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("data: %s is not a regular file", path)
	}
	return f, fi.Size(), nil
}

// readPickleInto decodes a batch pickle and appends its records to recs (Source names the
// file). alloc gives the buffer for the pixel data: when it returns the free capacity of
// recs.Pixels, the data is read in place.
func readPickleInto(r io.Reader, size int64, recs *Records, alloc func(n int) []byte) error {
	spec, source := recs.Spec, recs.Source
	dict, err := decodePickle(r, size, source, alloc)
	if err != nil {
		return err
	}
	labelKeys := pickleLabelKeys(spec)
	vals, err := pickleKeys(source, dict, append([]string{"data"}, labelKeys...), []string{"batch_label", "filenames"})
	if err != nil {
		return err
	}
	arr, ok := vals["data"].(*pickle.Array)
	if !ok || !arr.Built() {
		return &PickleError{File: source, Offset: -1, Record: -1, Key: "data", Value: pickle.ShortValue(vals["data"]), Kind: ErrPickleLayout,
			Reason: "not a NumPy array: want a uint8 array of shape [N, 3072]"}
	}
	n := arr.Rows
	if n == 0 {
		return &PickleError{File: source, Offset: -1, Record: -1, Key: "data", Kind: ErrNoRecords,
			Reason: "no records: the array has shape [0, 3072]; re-download the file"}
	}
	if v, ok := vals["batch_label"]; ok {
		if _, ok := pickle.PyString(v); !ok {
			return &PickleError{File: source, Offset: -1, Record: -1, Key: "batch_label", Value: pickle.ShortValue(v), Kind: ErrPickleLayout,
				Reason: "batch_label is not a string"}
		}
	}
	if v, ok := vals["filenames"]; ok {
		if err := checkStringList(source, "filenames", v, n); err != nil {
			return err
		}
	}
	lists, err := pickleLabelLists(source, vals, labelKeys, n)
	if err != nil {
		return err
	}
	labels, err := pickleLabels(recs, lists, labelKeys, n)
	if err != nil {
		return err
	}
	recs.RawLabels = labels
	recs.Pixels = appendPixels(recs.Pixels, arr.Data)
	return nil
}

// pickleLabelLists are the label lists of a batch pickle's values (the keys labelKeys of
// vals), each of n ints, one per image.
func pickleLabelLists(source string, vals map[string]any, labelKeys []string, n int) ([]*types.List, error) {
	lists := make([]*types.List, len(labelKeys))
	for j, key := range labelKeys {
		l, ok := vals[key].(*types.List)
		if !ok || l.Len() != n {
			got := pickle.ShortValue(vals[key])
			if ok {
				got = fmt.Sprintf("%d labels", l.Len())
			}
			return nil, &PickleError{File: source, Offset: -1, Record: -1, Key: key, Value: got, Kind: ErrPickleLayout,
				Reason: fmt.Sprintf("want a list of %d ints, one per image of \"data\"", n)}
		}
		lists[j] = l
	}
	return lists, nil
}

// pickleLabels are recs' label bytes with the n labels of lists (those of labelKeys) appended,
// each checked against its range.
func pickleLabels(recs *Records, lists []*types.List, labelKeys []string, n int) ([]byte, error) {
	spec, source := recs.Spec, recs.Source
	first := recs.Len()
	lb := spec.LabelBytes
	labels := growBytes(recs.RawLabels, n*lb)
	for i := range n {
		for j, l := range lists {
			v := l.Get(i)
			label, ok := v.(int)
			if !ok || label < 0 || label >= spec.MaxLabels[j] {
				kind, reason := ErrLabelRange, fmt.Sprintf("%s outside the %s class range [0, %d)", labelByteName(spec, j), spec.Name, spec.MaxLabels[j])
				if !ok {
					kind, reason = ErrPickleLayout, labelByteName(spec, j)+" is not an int"
				} else if spec.Name == "cifar10" {
					reason += "; is this a CIFAR-100 file? Use the dataset cifar100, CIFAR100(...)"
				} else {
					reason += "; the file is corrupt: re-download it"
				}
				return nil, &PickleError{File: source, Offset: -1, Record: i, Key: labelKeys[j], Value: pickle.ShortValue(v), Kind: kind, Reason: reason}
			}
			labels[(first+i)*lb+j] = byte(label)
		}
	}
	return labels, nil
}

// growBytes extends b by n bytes (in place when its capacity allows).
func growBytes(b []byte, n int) []byte {
	if len(b)+n <= cap(b) {
		return b[:len(b)+n]
	}
	return append(b, make([]byte, n)...)
}

// appendPixels appends data to pixels; when data was read into pixels' free capacity (the
// alloc of loadPythonSplit) nothing is copied.
func appendPixels(pixels, data []byte) []byte {
	if len(pixels) == 0 && cap(pixels) == 0 {
		return data
	}
	if len(data) > 0 && len(pixels)+len(data) <= cap(pixels) && &pixels[:len(pixels)+1][len(pixels)] == &data[0] {
		return pixels[:len(pixels)+len(data)]
	}
	return append(pixels, data...)
}

// checkStringList checks a list of n strings (the filenames of a batch, or class names).
func checkStringList(source, key string, v any, n int) error {
	l, ok := v.(*types.List)
	if !ok || (n >= 0 && l.Len() != n) {
		got := pickle.ShortValue(v)
		if ok {
			got = fmt.Sprintf("%d entries", l.Len())
		}
		return &PickleError{File: source, Offset: -1, Record: -1, Key: key, Value: got, Kind: ErrPickleLayout,
			Reason: fmt.Sprintf("want a list of %d strings", n)}
	}
	for i := range l.Len() {
		if _, ok := pickle.PyString(l.Get(i)); !ok {
			return &PickleError{File: source, Offset: -1, Record: i, Key: key, Value: pickle.ShortValue(l.Get(i)), Kind: ErrPickleLayout,
				Reason: "not a string"}
		}
	}
	return nil
}

// readPickleMetaFile reads the class names from the Python layout's meta file: "label_names"
// (10) of CIFAR-10's batches.meta, or "fine_label_names" (100) and "coarse_label_names" (20)
// of CIFAR-100's meta, and returns those of spec's label set. The checks and errors are
// readPickle's. spec is checked by its caller (LoadSplit).
func readPickleMetaFile(path string, spec Spec) ([]string, error) {
	f, size, err := openPickle(path, spec)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > 1<<20 {
		return nil, &PickleError{File: path, Offset: -1, Record: -1, Value: fmt.Sprintf("%d bytes", size), Kind: ErrPickleLayout,
			Reason: "a meta file has a few KB: this is not one"}
	}
	return readPickleMeta(f, size, path, spec)
}

// readPickleMeta decodes a meta pickle; see readPickleMetaFile.
func readPickleMeta(r io.Reader, size int64, source string, spec Spec) ([]string, error) {
	dict, err := decodePickle(r, size, source, func(n int) []byte { return make([]byte, n) })
	if err != nil {
		return nil, err
	}
	want := map[string]int{"label_names": 10}
	required, optional := []string{"label_names"}, []string{"num_cases_per_batch", "num_vis"}
	if spec.Name == "cifar100" {
		want = map[string]int{"coarse_label_names": 20, "fine_label_names": 100}
		required, optional = []string{"coarse_label_names", "fine_label_names"}, nil
	}
	vals, err := pickleKeys(source, dict, required, optional)
	if err != nil {
		return nil, err
	}
	for _, k := range optional {
		if v, ok := vals[k]; ok {
			if _, isInt := v.(int); !isInt {
				return nil, &PickleError{File: source, Offset: -1, Record: -1, Key: k, Value: pickle.ShortValue(v), Kind: ErrPickleLayout, Reason: "not an int"}
			}
		}
	}
	for _, k := range required {
		if err := checkStringList(source, k, vals[k], want[k]); err != nil {
			return nil, err
		}
	}
	key := required[0]
	if spec.Name == "cifar100" && spec.Labels == LabelsFine {
		key = "fine_label_names"
	}
	l := vals[key].(*types.List)
	names := make([]string, l.Len())
	for i := range names {
		names[i], _ = pickle.PyString(l.Get(i))
	}
	return names, nil
}
