package data

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/internal/atomicfile"
)

// Split selects the training or the test part of a dataset.
type Split int

const (
	// SplitTrain is the training split (50,000 images in the official datasets).
	SplitTrain Split = iota
	// SplitTest is the test split (10,000 images in the official datasets).
	SplitTest
)

// String returns "train" or "test".
func (s Split) String() string {
	switch s {
	case SplitTrain:
		return "train"
	case SplitTest:
		return "test"
	}
	return fmt.Sprintf("Split(%d)", int(s))
}

// ParseSplit parses "train" or "test".
func ParseSplit(s string) (Split, error) {
	switch s {
	case "train":
		return SplitTrain, nil
	case "test":
		return SplitTest, nil
	}
	return SplitTrain, fmt.Errorf("data: unknown split %q: use \"train\" or \"test\"", s)
}

// Files returns the data files of the split, relative to spec.Dir.
func (s Split) Files(spec Spec) []string {
	if s == SplitTest {
		return spec.TestFiles
	}
	return spec.TrainFiles
}

// Size returns the number of records of the split in the official dataset.
func (s Split) Size(spec Spec) int {
	if s == SplitTest {
		return spec.TestSize
	}
	return spec.TrainSize
}

// Records holds CIFAR records exactly as they are stored on disk, split into pixels and label
// bytes. It is compact (3 KiB per image) and is decoded to float32 batch by batch by a Dataset.
type Records struct {
	// Spec describes the layout of the records and which label Label returns.
	Spec Spec
	// Source names where the records came from (a file name or a description); used in errors.
	Source string
	// Pixels holds Len()*ImageBytes bytes: per image, channel-planar R, G, B planes of 32x32
	// row-major pixels, exactly as on disk.
	Pixels []byte
	// RawLabels holds Len()*Spec.LabelBytes bytes, the label bytes exactly as on disk
	// (CIFAR-10: the label; CIFAR-100: coarse, fine).
	RawLabels []byte
	// Kind is what the records are, when it is known: KindSynthetic, KindVerified or
	// KindUnverified as the State that loaded them found it (State.LoadSplit), KindSynthetic for
	// SynthesizeRecords'; "" when not known (LoadSplit, ReadRecords, records built in memory).
	// Captions of figures and accuracies say it (Caption).
	Kind string
}

// NewRecords returns n zeroed records (all labels 0, all pixels black) of the given spec.
func NewRecords(spec Spec, source string, n int) *Records {
	return &Records{
		Spec:      spec,
		Source:    source,
		Pixels:    make([]byte, n*ImageBytes),
		RawLabels: make([]byte, n*spec.LabelBytes),
	}
}

// Len returns the number of records.
func (r *Records) Len() int { return len(r.Pixels) / ImageBytes }

// Label returns the label of record i in the Spec's label set (CIFAR-10 label, CIFAR-100 fine or coarse).
func (r *Records) Label(i int) int { return int(r.RawLabels[i*r.Spec.LabelBytes+r.Spec.LabelByte]) }

// FineLabel returns the CIFAR-10 label, or the CIFAR-100 fine label (0..99), of record i.
func (r *Records) FineLabel(i int) int {
	return int(r.RawLabels[i*r.Spec.LabelBytes+r.Spec.LabelBytes-1])
}

// CoarseLabel returns the CIFAR-100 coarse label (0..19) of record i; -1 for CIFAR-10.
func (r *Records) CoarseLabel(i int) int {
	if r.Spec.LabelBytes < 2 {
		return -1
	}
	return int(r.RawLabels[i*r.Spec.LabelBytes])
}

// Image returns the ImageBytes channel-planar pixels of record i. The slice aliases Pixels.
func (r *Records) Image(i int) []byte {
	return r.Pixels[i*ImageBytes : (i+1)*ImageBytes : (i+1)*ImageBytes]
}

// Labels returns the labels of all records in the Spec's label set.
func (r *Records) Labels() []int {
	labels := make([]int, r.Len())
	for i := range labels {
		labels[i] = r.Label(i)
	}
	return labels
}

// WithSpec returns a view of the same records read with another Spec of the same dataset,
// typically to switch CIFAR-100 between fine and coarse labels. The bytes are shared, not copied.
func (r *Records) WithSpec(spec Spec) (*Records, error) {
	if spec.Name != r.Spec.Name || spec.LabelBytes != r.Spec.LabelBytes {
		return nil, fmt.Errorf("data: %s: records of %s cannot be viewed as %s: the record layouts differ",
			r.Source, r.Spec.Name, spec.Name)
	}
	view := *r
	view.Spec = spec
	return &view, nil
}

// Validate checks that the slices agree with each other and with the Spec and that every
// label byte is within the Spec's range. Records from ReadRecords, readFile and LoadSplit
// are already valid; Validate is for records built by hand.
func (r *Records) Validate() error {
	if err := checkSpec(r.Spec); err != nil {
		return err
	}
	if len(r.Pixels)%ImageBytes != 0 || len(r.RawLabels) != r.Len()*r.Spec.LabelBytes {
		return &FormatError{File: r.Source, Record: -1, Kind: ErrInconsistent,
			Reason: fmt.Sprintf("%d pixel bytes and %d label bytes do not make whole %s records "+
				"(want n*%d pixel bytes and n*%d label bytes)",
				len(r.Pixels), len(r.RawLabels), r.Spec.Name, ImageBytes, r.Spec.LabelBytes)}
	}
	lb := r.Spec.LabelBytes
	for i := 0; i < r.Len(); i++ {
		if err := checkLabels(r.Spec, r.Source, r.RawLabels[i*lb:(i+1)*lb], i, int64(i)*int64(r.Spec.RecordBytes())); err != nil {
			return err
		}
	}
	return nil
}

// LabelHistogram counts the records of each label of the Spec's label set; the slice has
// Spec.NumClasses entries (labels beyond it, only possible in unvalidated records, are ignored).
func (r *Records) LabelHistogram() []int {
	hist := make([]int, r.Spec.NumClasses)
	for i := 0; i < r.Len(); i++ {
		if l := r.Label(i); l < len(hist) {
			hist[l]++
		}
	}
	return hist
}

// ChannelStats returns the per-channel (R, G, B) mean and standard deviation of all pixels,
// on values scaled to [0, 1] (the convention of Spec.Mean and Spec.Std).
func (r *Records) ChannelStats() (mean, std [ImageChannels]float64) {
	const plane = ImageHeight * ImageWidth
	var counts [ImageChannels][256]int64
	for i := 0; i < r.Len(); i++ {
		img := r.Image(i)
		for c := 0; c < ImageChannels; c++ {
			hist := &counts[c]
			for _, v := range img[c*plane : (c+1)*plane] {
				hist[v]++
			}
		}
	}
	n := float64(r.Len() * plane)
	if n == 0 {
		return mean, std
	}
	for c := range counts {
		var sum, sumSq float64
		for v, k := range counts[c] {
			x := float64(v) / 255
			sum += float64(k) * x
			sumSq += float64(k) * x * x
		}
		mean[c] = sum / n
		std[c] = math.Sqrt(math.Max(0, sumSq/n-mean[c]*mean[c]))
	}
	return mean, std
}

// readBufferSize is the buffer used to read and write record files.
const readBufferSize = 256 << 10

// ReadRecords reads CIFAR records from r until EOF. source names the data in errors. Every
// read uses io.ReadFull, so a short read is never mistaken for a record. It returns a
// *FormatError for a truncated last record (ErrTruncated), a label byte outside the spec's
// range (ErrLabelRange) or empty input (ErrNoRecords).
func ReadRecords(r io.Reader, source string, spec Spec) (*Records, error) {
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	recs := &Records{Spec: spec, Source: source}
	br := bufio.NewReaderSize(r, readBufferSize)
	label := make([]byte, spec.LabelBytes)
	pixels := make([]byte, ImageBytes)
	for i := 0; ; i++ {
		_, err := readRecordInto(br, spec, source, i, label, pixels)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		recs.RawLabels = append(recs.RawLabels, label...)
		recs.Pixels = append(recs.Pixels, pixels...)
	}
	if recs.Len() == 0 {
		return nil, &FormatError{File: source, Record: -1, Offset: 0, Kind: ErrNoRecords,
			Reason: "no records: the data is empty; re-download or regenerate it"}
	}
	return recs, nil
}

// readRecordInto reads record i: its label bytes into label (validating them) and its pixels
// into pixels. It returns io.EOF (unwrapped) when the input ends cleanly before the record.
func readRecordInto(r io.Reader, spec Spec, source string, i int, label, pixels []byte) (int, error) {
	offset := int64(i) * int64(spec.RecordBytes())
	n, err := io.ReadFull(r, label)
	if err == io.EOF {
		return 0, io.EOF
	}
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return n, truncatedError(spec, source, i, n)
		}
		return n, fmt.Errorf("data: %s: reading record %d at byte offset %d: %w", source, i, offset, err)
	}
	if err := checkLabels(spec, source, label, i, offset); err != nil {
		return n, err
	}
	m, err := io.ReadFull(r, pixels)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return n + m, truncatedError(spec, source, i, n+m)
		}
		return n + m, fmt.Errorf("data: %s: reading record %d at byte offset %d: %w", source, i, offset, err)
	}
	return n + m, nil
}

// truncatedError reports that record i ended after got bytes.
func truncatedError(spec Spec, source string, i, got int) error {
	return &FormatError{File: source, Record: i, Offset: int64(i)*int64(spec.RecordBytes()) + int64(got), Kind: ErrTruncated,
		Reason: fmt.Sprintf("truncated record: the data ends after %d of the %d bytes of this %s record; "+
			"the file is incomplete: re-download or regenerate it", got, spec.RecordBytes(), spec.Name)}
}

// partialRecordError reports a file of size bytes that is not a whole number of records.
func partialRecordError(spec Spec, source string, size int64) error {
	rb := int64(spec.RecordBytes())
	whole := size / rb
	reason := fmt.Sprintf("file size %d bytes is not a whole number of %d-byte %s records (%d whole records and %d extra bytes)",
		size, rb, spec.Name, whole, size%rb)
	if spec.Name == "cifar10" && size%int64(2+ImageBytes) == 0 {
		reason += "; the size fits CIFAR-100 records: use the dataset cifar100, CIFAR100(...)"
	} else if spec.Name == "cifar100" && size%int64(1+ImageBytes) == 0 {
		reason += "; the size fits CIFAR-10 records: use the dataset cifar10, CIFAR10()"
	} else {
		reason += "; the file is incomplete or corrupt: re-download or regenerate it"
	}
	return &FormatError{File: source, Record: int(whole), Offset: whole * rb, Kind: ErrPartialRecord, Reason: reason}
}

// readFile reads a CIFAR binary file. It checks the file size first: a size that is not a
// whole number of records is an ErrPartialRecord error before anything is read.
func readFile(path string, spec Spec) (*Records, error) {
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: opening %s data file: %w", spec.Name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w", path, err)
	}
	n, err := recordCount(spec, path, fi.Size())
	if err != nil {
		return nil, err
	}
	recs := NewRecords(spec, path, n)
	if err := readRecordsAt(f, recs, 0, n); err != nil {
		return nil, err
	}
	return recs, nil
}

// recordCount converts a file size to a number of records, rejecting empty and partial files.
func recordCount(spec Spec, source string, size int64) (int, error) {
	rb := int64(spec.RecordBytes())
	if size%rb != 0 {
		return 0, partialRecordError(spec, source, size)
	}
	if size == 0 {
		return 0, &FormatError{File: source, Record: -1, Offset: 0, Kind: ErrNoRecords,
			Reason: "no records: the file is empty; re-download or regenerate it"}
	}
	return int(size / rb), nil
}

// readRecordsAt reads n records from r into recs starting at record index first (of recs).
// Record indices in errors are relative to r (the file), offsets too.
func readRecordsAt(r io.Reader, recs *Records, first, n int) error {
	spec := recs.Spec
	lb := spec.LabelBytes
	br := bufio.NewReaderSize(r, readBufferSize)
	for i := 0; i < n; i++ {
		j := first + i
		_, err := readRecordInto(br, spec, recs.Source, i, recs.RawLabels[j*lb:(j+1)*lb],
			recs.Pixels[j*ImageBytes:(j+1)*ImageBytes])
		if err == io.EOF {
			return truncatedError(spec, recs.Source, i, 0)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// LoadSplit reads all files of a split from root/spec.Dir and concatenates them in the
// official order. root is the folder that contains spec.Dir (as extracted from the official
// archive or written by Synthesize). When root has no binary folder but the Python layout's
// (cifar-10-batches-py, cifar-100-python, as torchvision and Keras download them), the
// pickles are read instead (see DetectLayout and readPickle), with the class names of their
// meta file; the records are the same either way.
func LoadSplit(root string, spec Spec, split Split) (*Records, error) {
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	layout, _, err := detectLayout(root, spec)
	if err != nil {
		if e := folderItself(root, spec); e != nil {
			return nil, e
		}
	}
	return loadSplitIn(root, spec, layout, split)
}

// LoadSplit loads a split from what StateOf (or PrepareState) found, with no second look at
// the folder: LoadRoot's dataset folder, in its Layout; the records' Kind is the state's. For KindNone it returns LoadSplit's
// error for Root, which says how to get the data.
func (s State) LoadSplit(split Split) (*Records, error) {
	if s.Kind == KindNone || checkSpec(s.spec) != nil {
		return LoadSplit(s.Root, s.spec, split)
	}
	recs, err := loadSplitIn(s.LoadRoot, s.spec, s.Layout, split)
	if err != nil {
		return nil, err
	}
	recs.Kind = s.Kind
	return recs, nil
}

// loadSplitIn is LoadSplit for a spec already checked, whose folder under root has the given
// layout (as DetectLayout or StateOf found it).
func loadSplitIn(root string, spec Spec, layout Layout, split Split) (*Records, error) {
	if layout == LayoutPython || spec.Layout() == LayoutPython {
		return loadPythonSplit(root, spec, split)
	}
	files := split.Files(spec)
	if len(files) == 0 {
		return nil, fmt.Errorf("data: %s has no %s files", spec.Name, split)
	}
	dir := filepath.Join(root, spec.Dir)
	counts := make([]int, len(files))
	total := 0
	for k, name := range files {
		path := filepath.Join(dir, name)
		fi, err := os.Stat(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("data: %s %s split: data file %s is missing: run "+
					"`cifarlab download --dataset %s --data %s` for the real data or "+
					"`cifarlab synth --dataset %s --out %s` for synthetic data: %w",
					spec.Name, split, path, spec.Name, root, spec.Name, root, err)
			}
			return nil, fmt.Errorf("data: %s %s split: %w", spec.Name, split, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("data: %s %s split: %s is not a regular file", spec.Name, split, path)
		}
		if counts[k], err = recordCount(spec, path, fi.Size()); err != nil {
			return nil, err
		}
		total += counts[k]
	}
	source := filepath.Join(dir, files[0])
	if len(files) > 1 {
		source = fmt.Sprintf("%s/{%s..%s}", dir, files[0], files[len(files)-1])
	}
	recs := NewRecords(spec, source, total)
	first := 0
	for k, name := range files {
		path := filepath.Join(dir, name)
		part := &Records{Spec: spec, Source: path, Pixels: recs.Pixels, RawLabels: recs.RawLabels}
		if err := readFileInto(path, part, first, counts[k]); err != nil {
			return nil, err
		}
		first += counts[k]
	}
	return recs, nil
}

// readFileInto reads the n records of the file at path into recs from record index first.
func readFileInto(path string, recs *Records, first, n int) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("data: opening %s data file: %w", recs.Spec.Name, err)
	}
	defer f.Close()
	return readRecordsAt(f, recs, first, n)
}

// writeRecords writes recs in the CIFAR binary format of recs.Spec: per record the label
// bytes followed by the channel-planar pixels. It refuses records that ReadRecords would
// reject (inconsistent slices or a label byte out of range), so that what it writes always
// reads back byte for byte.
func writeRecords(w io.Writer, recs *Records) error {
	if err := recs.Validate(); err != nil {
		return err
	}
	if recs.Len() == 0 {
		return &FormatError{File: recs.Source, Record: -1, Kind: ErrNoRecords,
			Reason: "no records to write: a CIFAR file must hold at least one record"}
	}
	bw := bufio.NewWriterSize(w, readBufferSize)
	lb := recs.Spec.LabelBytes
	for i := 0; i < recs.Len(); i++ {
		if _, err := bw.Write(recs.RawLabels[i*lb : (i+1)*lb]); err != nil {
			return fmt.Errorf("data: writing record %d of %s: %w", i, recs.Source, err)
		}
		if _, err := bw.Write(recs.Image(i)); err != nil {
			return fmt.Errorf("data: writing record %d of %s: %w", i, recs.Source, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("data: writing %s: %w", recs.Source, err)
	}
	return nil
}

// writeFile writes recs to path atomically: it writes a temporary file in the same folder,
// syncs it and renames it over path, so readers never see a partial file. The folder is
// created if needed.
func writeFile(path string, recs *Records) error {
	return atomicfile.WriteFile(path, func(w io.Writer) error { return writeRecords(w, recs) })
}
