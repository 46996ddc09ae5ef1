package data

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// py2Pickle writes pickles the way Python 2's cPickle wrote the official CIFAR files
// (protocol 2, SHORT_BINSTRING/BINSTRING strings, BINPUT memo entries), for tests that need
// python-layout data without Python: download archives, the benchmark and fuzz seeds. The
// fixtures written by Python itself (testdata/pickles) check that this is the same structure.
type py2Pickle struct {
	bytes.Buffer
	memo int
}

func (p *py2Pickle) put() {
	if p.memo < 256 {
		p.WriteByte('q')
		p.WriteByte(byte(p.memo))
	} else {
		p.WriteByte('r')
		_ = binary.Write(p, binary.LittleEndian, uint32(p.memo))
	}
	p.memo++
}

func (p *py2Pickle) str(s []byte) {
	if len(s) < 256 {
		p.WriteByte('U')
		p.WriteByte(byte(len(s)))
	} else {
		p.WriteByte('T')
		_ = binary.Write(p, binary.LittleEndian, int32(len(s)))
	}
	p.Write(s)
	p.put()
}

func (p *py2Pickle) int(v int) {
	switch {
	case v >= 0 && v < 256:
		p.WriteByte('K')
		p.WriteByte(byte(v))
	case v >= 0 && v < 65536:
		p.WriteByte('M')
		_ = binary.Write(p, binary.LittleEndian, uint16(v))
	default:
		p.WriteByte('J')
		_ = binary.Write(p, binary.LittleEndian, int32(v))
	}
}

// list writes a list of n items in APPENDS batches of 1000, as pickle does.
func (p *py2Pickle) list(n int, item func(i int)) {
	p.WriteByte(']')
	p.put()
	for start := 0; start < n; start += 1000 {
		p.WriteByte('(')
		for i := start; i < min(n, start+1000); i++ {
			item(i)
		}
		p.WriteByte('e')
	}
}

// array writes numpy.core.multiarray._reconstruct(ndarray, (0,), 'b') with a uint8 [n, 3072] state.
func (p *py2Pickle) array(data []byte) {
	p.WriteString("cnumpy.core.multiarray\n_reconstruct\n")
	p.put()
	p.WriteString("cnumpy\nndarray\n")
	p.put()
	p.int(0)
	p.WriteByte(0x85)
	p.put()
	p.str([]byte("b"))
	p.WriteByte(0x87)
	p.put()
	p.WriteByte('R')
	p.put()
	p.WriteByte('(')
	p.int(1)
	p.int(len(data) / ImageBytes)
	p.int(ImageBytes)
	p.WriteByte(0x86)
	p.put()
	p.WriteString("cnumpy\ndtype\n")
	p.put()
	p.str([]byte("u1"))
	p.int(0)
	p.int(1)
	p.WriteByte(0x87)
	p.put()
	p.WriteByte('R')
	p.put()
	p.WriteByte('(')
	p.int(3)
	p.str([]byte("|"))
	p.WriteString("NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00t")
	p.put()
	p.WriteByte('b')
	p.WriteByte(0x89)
	p.str(data)
	p.WriteByte('t')
	p.put()
	p.WriteByte('b')
}

// py2Batch returns the pickle of recs as an official batch file.
func py2Batch(recs *Records) []byte {
	p := &py2Pickle{}
	p.WriteString("\x80\x02}")
	p.put()
	p.WriteByte('(')
	p.str([]byte("batch_label"))
	p.str([]byte("training batch"))
	lb := recs.Spec.LabelBytes
	for j, key := range pickleLabelKeys(recs.Spec) {
		p.str([]byte(key))
		p.list(recs.Len(), func(i int) { p.int(int(recs.RawLabels[i*lb+j])) })
	}
	p.str([]byte("data"))
	p.array(recs.Pixels)
	p.str([]byte("filenames"))
	p.list(recs.Len(), func(i int) { p.str(fmt.Appendf(nil, "img_%05d.png", i)) })
	p.WriteString("u.")
	return p.Bytes()
}

// py2Meta returns the meta file of spec's dataset with the official class names.
func py2Meta(spec Spec) []byte {
	p := &py2Pickle{}
	p.WriteString("\x80\x02}")
	p.put()
	p.WriteByte('(')
	names := func(key string, names []string) {
		p.str([]byte(key))
		p.list(len(names), func(i int) { p.str([]byte(names[i])) })
	}
	if spec.Name == "cifar10" {
		p.str([]byte("num_cases_per_batch"))
		p.int(10000)
		names("label_names", CIFAR10().ClassNames)
		p.str([]byte("num_vis"))
		p.int(ImageBytes)
	} else {
		names("fine_label_names", CIFAR100(LabelsFine).ClassNames)
		names("coarse_label_names", CIFAR100(LabelsCoarse).ClassNames)
	}
	p.WriteString("u.")
	return p.Bytes()
}

// pythonFolderFiles returns the files of a python-layout folder holding, per split, the
// records of testRecords split over the split's files (sizes from spec).
func pythonFolderFiles(spec Spec) map[string][]byte {
	py := spec.InLayout(LayoutPython)
	py.TrainSize, py.TestSize = spec.TrainSize, spec.TestSize
	files := map[string][]byte{py.MetaFile(): py2Meta(spec)}
	for _, split := range []Split{SplitTrain, SplitTest} {
		names := split.Files(py)
		all := testRecords(spec, split.Size(py))
		first := 0
		for k, name := range names {
			n := splitFileRecords(split.Size(py), len(names), k)
			part := &Records{Spec: spec, Pixels: all.Pixels[first*ImageBytes : (first+n)*ImageBytes],
				RawLabels: all.RawLabels[first*spec.LabelBytes : (first+n)*spec.LabelBytes]}
			files[name] = py2Batch(part)
			first += n
		}
	}
	return files
}

// writePythonFolder writes pythonFolderFiles(spec) into root/<python dir>.
func writePythonFolder(t testing.TB, root string, spec Spec) {
	t.Helper()
	dir := filepath.Join(root, spec.InLayout(LayoutPython).Dir)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, data := range pythonFolderFiles(spec) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
}
