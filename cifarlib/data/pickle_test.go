package data

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cifarlab/cifarlab/internal/testenv"
	"github.com/stretchr/testify/require"
)

// pickleFixture is the path of a committed fixture written by testdata/pickles/make_fixtures.py.
func pickleFixture(name string) string { return filepath.Join("testdata", "pickles", name+".pkl") }

// TestReadPickleMatchesBinaryReader decodes the pickles Python wrote (protocol 2 with Python 2's
// opcodes, protocol 4, bytes keys) and checks they hold exactly the images and labels the binary
// reader reads from a binary file of the same records.
func TestReadPickleMatchesBinaryReader(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		spec    Spec
	}{
		{"cifar10_p2", CIFAR10()},
		{"cifar10_p4", CIFAR10()},
		{"cifar10_p4_bytes_keys", CIFAR10()},
		{"cifar100_p2", CIFAR100(LabelsFine)},
		{"cifar100_p4", CIFAR100(LabelsCoarse)},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			binPath := filepath.Join(t.TempDir(), "batch.bin")
			require.NoError(t, writeFile(binPath, testRecords(tc.spec, 2)))
			want, err := readFile(binPath, tc.spec)
			require.NoError(t, err)

			got, err := ReadPickleFile(pickleFixture(tc.fixture), tc.spec)
			require.NoError(t, err)
			require.Equal(t, 2, got.Len())
			require.True(t, bytes.Equal(want.Pixels, got.Pixels), "pixels differ")
			require.Equal(t, want.RawLabels, got.RawLabels)
			require.Equal(t, want.Labels(), got.Labels())
			require.Equal(t, tc.spec, got.Spec)
			require.Equal(t, pickleFixture(tc.fixture), got.Source)
			require.NoError(t, got.Validate())
		})
	}
}

// TestGoPickleWriterIsPython2 checks that the test writer used without Python (download
// archives, benchmark, fuzz seeds) writes the bytes Python's Python-2-style writer writes.
func TestGoPickleWriterIsPython2(t *testing.T) {
	want, err := os.ReadFile(pickleFixture("cifar10_meta"))
	require.NoError(t, err)
	require.Equal(t, want, py2Meta(CIFAR10()))
	require.Len(t, want, 158, "the official batches.meta has 158 bytes too")

	recs := testRecords(CIFAR100(LabelsFine), 2)
	got, err := readPickle(bytes.NewReader(py2Batch(recs)), int64(len(py2Batch(recs))), "go", recs.Spec)
	require.NoError(t, err)
	require.Equal(t, recs.Pixels, got.Pixels)
	require.Equal(t, recs.RawLabels, got.RawLabels)
}

func TestReadPickleMeta(t *testing.T) {
	names, err := readPickleMetaFile(pickleFixture("cifar10_meta"), CIFAR10())
	require.NoError(t, err)
	require.Equal(t, CIFAR10().ClassNames, names)
	for _, fixture := range []string{"cifar100_meta", "cifar100_meta_p4"} {
		fine, err := readPickleMetaFile(pickleFixture(fixture), CIFAR100(LabelsFine))
		require.NoError(t, err)
		require.Len(t, fine, 100)
		require.Equal(t, "fine07", fine[7])
		coarse, err := readPickleMetaFile(pickleFixture(fixture), CIFAR100(LabelsCoarse))
		require.NoError(t, err)
		require.Len(t, coarse, 20)
		require.Equal(t, "coarse19", coarse[19])
	}
	_, err = readPickleMetaFile(pickleFixture("cifar10_meta"), CIFAR100(LabelsFine))
	var pe *PickleError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, ErrPickleLayout)
	require.Equal(t, "label_names", pe.Key)
	require.Contains(t, err.Error(), "this is a CIFAR-10 file: use the dataset cifar10")
	_, err = readPickleMetaFile(pickleFixture("cifar10_p2"), CIFAR10())
	require.ErrorContains(t, err, "unexpected key: this file has the keys [\"batch_label\", \"data\", \"filenames\", \"labels\"]; want label_names")
}

// TestReadPickleRefuses runs the hostile and malformed fixtures: each is refused with a
// *PickleError of the right kind that names the file, where, and the value.
func TestReadPickleRefuses(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		spec    Spec
		kind    error
		offset  int64 // -1: found after decoding
		key     string
		record  int
		value   string
		reason  string
	}{
		{"evil_os_system_p0", CIFAR10(), ErrUnsafePickle, 0, "", -1, "os.system", "global not allowed"},
		{"evil_posix_system_p2", CIFAR10(), ErrUnsafePickle, 2, "", -1, "posix.system", "nothing of this file was executed"},
		{"evil_eval_p4", CIFAR10(), ErrUnsafePickle, 29, "", -1, "builtins.eval", "global not allowed"},
		{"evil_ordereddict_p4", CIFAR10(), ErrUnsafePickle, 20, "", -1, `"collections"`, "could only serve STACK_GLOBAL"},
		{"evil_copy_reg_p2", CIFAR10(), ErrUnsafePickle, 2, "", -1, "copy_reg._reconstructor", "global not allowed"},
		{"py3_protocol2", CIFAR10(), ErrUnsafePickle, 143, "", -1, "_codecs.encode", "re-save with protocol 4"},
		{"truncated", CIFAR10(), ErrTruncated, 214, "", -1, "", "the pickle ends (after 3853 bytes) inside a string of 6144 bytes"},
		{"wrong_shape", CIFAR10(), ErrPickleLayout, 6372, "", -1, "(2, 3, 32, 32)", "array shape is not 2-D"},
		{"wrong_dtype", CIFAR10(), ErrPickleLayout, 183, "", -1, `"u2"`, "array dtype is not uint8"},
		{"label_out_of_range", CIFAR10(), ErrLabelRange, -1, "labels", 1, "10", "label outside the cifar10 class range [0, 10); is this a CIFAR-100 file?"},
		{"fine_label_out_of_range", CIFAR100(LabelsFine), ErrLabelRange, -1, "fine_labels", 1, "100", "fine label outside the cifar100 class range [0, 100)"},
		{"wrong_keys", CIFAR10(), ErrPickleLayout, -1, "label", -1, "", "unexpected key"},
		{"cifar100_p2", CIFAR10(), ErrPickleLayout, -1, "fine_labels", -1, "", "this is a CIFAR-100 file: use the dataset cifar100"},
		{"cifar10_p2", CIFAR100(LabelsFine), ErrPickleLayout, -1, "labels", -1, "", "this is a CIFAR-10 file: use the dataset cifar10"},
		{"label_count", CIFAR10(), ErrPickleLayout, -1, "labels", -1, "1 labels", "want a list of 2 ints"},
		{"label_not_int", CIFAR10(), ErrPickleLayout, -1, "labels", 0, `"3"`, "label is not an int"},
		{"not_a_dict", CIFAR10(), ErrPickleLayout, -1, "", -1, "", "the pickle is not a dict"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			recs, err := ReadPickleFile(pickleFixture(tc.fixture), tc.spec)
			require.Nil(t, recs)
			var pe *PickleError
			require.ErrorAs(t, err, &pe, "%v", err)
			require.ErrorIs(t, err, tc.kind)
			require.Equal(t, pickleFixture(tc.fixture), pe.File)
			require.Contains(t, err.Error(), pickleFixture(tc.fixture))
			require.Equal(t, tc.offset, pe.Offset, "%v", err)
			require.Equal(t, tc.key, pe.Key)
			require.Equal(t, tc.record, pe.Record)
			require.Contains(t, pe.Value, tc.value)
			require.Contains(t, pe.Reason, tc.reason)
		})
	}
}

// TestReadPickleExecutesNothing checks that the pickles that would run a shell command in
// Python leave no trace of it here.
func TestReadPickleExecutesNothing(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	data := []byte("\x80\x02cposix\nsystem\nq\x00X\x0e\x00\x00\x00touch " + "./pwned" + "q\x01\x85q\x02Rq\x03.")
	t.Chdir(dir)
	_, err := readPickle(bytes.NewReader(data), int64(len(data)), "evil", CIFAR10())
	require.ErrorIs(t, err, ErrUnsafePickle)
	require.NoFileExists(t, marker)
}

// TestReadPickleInPlace checks the memory claim: the pixel data is read straight into the
// buffer the caller offers, so decoding allocates about one batch, not two or three.
func TestReadPickleInPlace(t *testing.T) {
	recs := testRecords(CIFAR10(), 200)
	data := py2Batch(recs)
	dst := &Records{Spec: CIFAR10(), Source: "mem", Pixels: make([]byte, 0, 200*ImageBytes), RawLabels: make([]byte, 0, 200)}
	base := &dst.Pixels[:1][0]
	require.NoError(t, readPickleInto(bytes.NewReader(data), int64(len(data)), dst,
		func(n int) []byte { return dst.Pixels[:n] }))
	require.Same(t, base, &dst.Pixels[0], "the pixels were copied")
	require.Equal(t, recs.Pixels, dst.Pixels)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := readPickle(bytes.NewReader(data), int64(len(data)), "mem", CIFAR10())
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Equal(t, recs.Pixels, got.Pixels)
	allocated := after.TotalAlloc - before.TotalAlloc
	require.Less(t, allocated, uint64(len(recs.Pixels))*13/10, "decoding a %d-byte batch allocated %d bytes", len(recs.Pixels), allocated)
}

// TestPickleFixturesUpToDate regenerates the committed fixtures with Python and NumPy and
// compares them byte for byte.
func TestPickleFixturesUpToDate(t *testing.T) {
	python := testenv.Python(t, "numpy")
	out := t.TempDir()
	cmd := exec.Command(python, filepath.Join("testdata", "pickles", "make_fixtures.py"), "fixtures", out)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	made, err := filepath.Glob(filepath.Join(out, "*.pkl"))
	require.NoError(t, err)
	committed, err := filepath.Glob(filepath.Join("testdata", "pickles", "*.pkl"))
	require.NoError(t, err)
	require.Len(t, committed, len(made))
	for _, path := range made {
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		got, err := os.ReadFile(pickleFixture(filepath.Base(path[:len(path)-4])))
		require.NoError(t, err, "run: .venv/bin/python cifarlib/data/testdata/pickles/make_fixtures.py fixtures cifarlib/data/testdata/pickles")
		require.True(t, bytes.Equal(want, got), "%s is stale: regenerate the fixtures", filepath.Base(path))
	}
}

// TestPythonLayoutMatchesBinary writes synthetic data in the binary layout, has Python rewrite
// it as torchvision's layout (protocol 2 as Python 2 wrote it, and protocol 4), and loads both:
// the same records, with the python layout detected.
func TestPythonLayoutMatchesBinary(t *testing.T) {
	python := testenv.Python(t, "numpy")
	binRoot := t.TempDir()
	opts := SynthOptions{Seed: 5, TrainSize: 50, TestSize: 20}
	for _, spec := range []Spec{CIFAR10(), CIFAR100(LabelsFine)} {
		require.NoError(t, Synthesize(binRoot, spec, opts))
	}
	for _, proto := range []string{"2", "4"} {
		t.Run("protocol"+proto, func(t *testing.T) {
			pyRoot := t.TempDir()
			msg, err := exec.Command(python, filepath.Join("testdata", "pickles", "make_fixtures.py"), "convert", binRoot, pyRoot,
				"--protocol", proto).CombinedOutput()
			require.NoError(t, err, "%s", msg)
			for _, spec := range []Spec{CIFAR10(), CIFAR100(LabelsFine), CIFAR100(LabelsCoarse)} {
				layout, err := DetectLayout(pyRoot, spec)
				require.NoError(t, err)
				require.Equal(t, LayoutPython, layout)
				dir, layout := Locate(pyRoot, spec)
				require.Equal(t, LayoutPython, layout)
				require.Equal(t, filepath.Join(pyRoot, spec.InLayout(LayoutPython).Dir), dir)
				for _, split := range []Split{SplitTrain, SplitTest} {
					want, err := LoadSplit(binRoot, spec, split)
					require.NoError(t, err)
					got, err := LoadSplit(pyRoot, spec, split)
					require.NoError(t, err)
					require.Equal(t, want.Len(), got.Len())
					require.True(t, bytes.Equal(want.Pixels, got.Pixels), "%s %s pixels differ", spec.ID(), split)
					require.Equal(t, want.RawLabels, got.RawLabels)
					require.Equal(t, want.Labels(), got.Labels())
					require.Equal(t, spec.Dir, got.Spec.Dir, "records carry the binary spec")
					switch spec.ID() {
					case "cifar100":
						require.Equal(t, "fine42", got.Spec.ClassNames[42], "class names come from the meta file")
					case "cifar100-coarse":
						require.Equal(t, "coarse19", got.Spec.ClassNames[19])
					default:
						require.Equal(t, CIFAR10().ClassNames, got.Spec.ClassNames)
					}
				}
			}
			// Not downloaded by cifarlab and not torchvision's files: not verified, so Prepare
			// synthesizes rather than pass the folder off as the real data.
			err = Verify(pyRoot, CIFAR10())
			require.ErrorIs(t, err, ErrNotVerified)
			require.ErrorContains(t, err, "not the official file's c99cafc152244af753f735de768cd75f (torchvision's pin)")
		})
	}
}

func TestDetectLayout(t *testing.T) {
	root := t.TempDir()
	_, err := DetectLayout(root, CIFAR10())
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "neither cifar-10-batches-bin/ (binary layout) nor cifar-10-batches-py/ (python layout")
	_, err = LoadSplit(root, CIFAR10(), SplitTrain)
	require.ErrorIs(t, err, os.ErrNotExist)

	writePythonFolder(t, root, smallSpec(CIFAR10()))
	l, err := DetectLayout(root, CIFAR10())
	require.NoError(t, err)
	require.Equal(t, LayoutPython, l)
	recs, err := LoadSplit(root, smallSpec(CIFAR10()), SplitTrain)
	require.NoError(t, err)
	require.Equal(t, testRecords(CIFAR10(), 10).Pixels, recs.Pixels)
	require.Equal(t, filepath.Join(root, "cifar-10-batches-py")+"/{data_batch_1..data_batch_5}", recs.Source)

	// A missing batch names the file and the fix, and is still fs.ErrNotExist.
	require.NoError(t, os.Remove(filepath.Join(root, "cifar-10-batches-py", "data_batch_3")))
	_, err = LoadSplit(root, CIFAR10(), SplitTrain)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "data_batch_3 is missing: run `cifarlab download --dataset cifar10 --format python")

	// With both layouts the binary one wins.
	require.NoError(t, Synthesize(root, smallSpec(CIFAR10()), SynthOptions{TrainSize: 10, TestSize: 3}))
	l, err = DetectLayout(root, CIFAR10())
	require.NoError(t, err)
	require.Equal(t, LayoutBinary, l)

	for s, want := range map[string]Layout{"python": LayoutPython, "py": LayoutPython, "binary": LayoutBinary, "": LayoutBinary} {
		got, err := ParseLayout(s)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err = ParseLayout("hdf5")
	require.ErrorContains(t, err, `unknown data format "hdf5"`)
	require.Equal(t, "cifar-100-python", CIFAR100(LabelsCoarse).InLayout(LayoutPython).Dir)
	require.Equal(t, []string{"train"}, CIFAR100(LabelsCoarse).InLayout(LayoutPython).TrainFiles)
	require.Equal(t, "meta", CIFAR100(LabelsCoarse).InLayout(LayoutPython).MetaFile())
	require.Equal(t, CIFAR10(), CIFAR10().InLayout(LayoutPython).InLayout(LayoutBinary))
}

// TestVerifyTorchvisionFolder checks the MD5 path of Verify: a folder whose files have
// torchvision's pinned sums is verified without a cifarlab marker.
func TestVerifyTorchvisionFolder(t *testing.T) {
	root := t.TempDir()
	spec := CIFAR10().InLayout(LayoutPython)
	writePythonFolder(t, root, smallSpec(CIFAR10()))
	err := Verify(root, CIFAR10())
	require.ErrorIs(t, err, ErrNotVerified)
	require.ErrorContains(t, err, "data_batch_1 has MD5 ")

	// Pretend the files are the official ones by pinning their sums.
	saved := pythonLayouts["cifar10"].md5
	pins := map[string]string{}
	for _, name := range pythonFiles(spec) {
		sum, err := fileMD5(filepath.Join(root, spec.Dir, name))
		require.NoError(t, err)
		pins[name] = sum
	}
	layout := pythonLayouts["cifar10"]
	layout.md5 = pins
	pythonLayouts["cifar10"] = layout
	defer func() { layout.md5 = saved; pythonLayouts["cifar10"] = layout }()
	require.NoError(t, Verify(root, CIFAR10()))
	dataRoot, synthetic, err := PrepareRoot(root, CIFAR10(), SynthOptions{})
	require.NoError(t, err)
	require.False(t, synthetic)
	require.Equal(t, root, dataRoot)

	require.NoError(t, os.WriteFile(filepath.Join(root, spec.Dir, "test_batch"), []byte("x"), 0o644))
	require.ErrorIs(t, Verify(root, CIFAR10()), ErrNotVerified)
	_, err = LoadSplit(root, CIFAR10(), SplitTest)
	var pe *PickleError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, ErrUnsafePickle, "'x' is no pickle opcode")
	require.Equal(t, filepath.Join(root, spec.Dir, "test_batch"), pe.File)
}

// TestReadPickleBounded feeds pickles built to exhaust memory or time: lengths far beyond the
// file, a value that doubles with every two bytes, a protocol-5 buffer. Each is refused quickly.
func TestReadPickleBounded(t *testing.T) {
	doubling := []byte("\x80\x02K\x01")
	for range 40 {
		doubling = append(doubling, '2', 0x86) // DUP, TUPLE2: 2^40 leaves if anything walked it
	}
	doubling = append(doubling, '.')
	for _, tc := range []struct {
		name string
		data []byte
		kind error
		msg  string
	}{
		{"binbytes8 of 2^62 bytes", []byte("\x80\x04\x8e\x00\x00\x00\x00\x00\x00\x00\x40."), ErrTruncated, "inside a string"},
		{"binstring of 2 GB in a short file", []byte("\x80\x02T\xff\xff\xff\x7f."), ErrTruncated, "inside a string of 2147483647 bytes"},
		{"after a refused protocol", []byte("\x80\x05\x8e\xff\xff\xff\xff\xff\xff\xff\x7f."), ErrUnsafePickle, "pickle protocol 5 is not supported"},
		{"frame of 2^62 bytes", []byte("\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x40."), ErrPickleLayout, "malformed pickle: the stack is empty"},
		{"doubling tuple", doubling, ErrPickleLayout, "the pickle is not a dict"},
		{"next_buffer", []byte("\x80\x05\x97."), ErrUnsafePickle, "protocol 5"},
		{"persistent id", []byte("\x80\x02K\x01Q."), ErrUnsafePickle, "persistent ids"},
		{"trailing bytes", append(py2Meta(CIFAR10()), 'x'), ErrPickleLayout, "1 bytes after the pickle's STOP opcode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readPickle(bytes.NewReader(tc.data), int64(len(tc.data)), "bounded", CIFAR10())
			require.ErrorIs(t, err, tc.kind)
			require.ErrorContains(t, err, tc.msg)
		})
	}
	_, err := readPickleMeta(bytes.NewReader(doubling), int64(len(doubling)), "bounded", CIFAR10())
	require.ErrorIs(t, err, ErrPickleLayout)
}
