package data

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// testRecords returns n deterministic records: CIFAR-10 label i%10; CIFAR-100 coarse i%20 and
// fine (7i+3)%100; pixel p of record i is (31i+7p)%256.
func testRecords(spec Spec, n int) *Records {
	recs := NewRecords(spec, "test records", n)
	for i := range n {
		if spec.LabelBytes == 2 {
			recs.RawLabels[2*i] = byte(i % 20)
			recs.RawLabels[2*i+1] = byte((7*i + 3) % 100)
		} else {
			recs.RawLabels[i] = byte(i % 10)
		}
		for p := range ImageBytes {
			recs.Pixels[i*ImageBytes+p] = byte((31*i + 7*p) % 256)
		}
	}
	return recs
}

// encodeByHand builds the on-disk bytes of recs independently of writeRecords.
func encodeByHand(recs *Records) []byte {
	var out []byte
	lb := recs.Spec.LabelBytes
	for i := 0; i < recs.Len(); i++ {
		out = append(out, recs.RawLabels[i*lb:(i+1)*lb]...)
		out = append(out, recs.Pixels[i*ImageBytes:(i+1)*ImageBytes]...)
	}
	return out
}

func TestRecordsRoundTrip(t *testing.T) {
	for _, spec := range []Spec{CIFAR10(), CIFAR100(LabelsFine), CIFAR100(LabelsCoarse)} {
		t.Run(spec.ID(), func(t *testing.T) {
			recs := testRecords(spec, 7)
			var buf bytes.Buffer
			require.NoError(t, writeRecords(&buf, recs))
			want := encodeByHand(recs)
			require.Len(t, want, 7*spec.RecordBytes())
			require.True(t, bytes.Equal(want, buf.Bytes()), "writer output differs from the CIFAR layout")

			got, err := ReadRecords(bytes.NewReader(buf.Bytes()), "mem", spec)
			require.NoError(t, err)
			require.Equal(t, 7, got.Len())
			require.Equal(t, recs.Pixels, got.Pixels)
			require.Equal(t, recs.RawLabels, got.RawLabels)
			require.Equal(t, "mem", got.Source)

			path := filepath.Join(t.TempDir(), "sub", "data.bin")
			require.NoError(t, writeFile(path, recs))
			onDisk, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, onDisk))
			fromFile, err := readFile(path, spec)
			require.NoError(t, err)
			require.Equal(t, recs.Pixels, fromFile.Pixels)
			require.Equal(t, recs.RawLabels, fromFile.RawLabels)
			require.Equal(t, path, fromFile.Source)
			entries, err := os.ReadDir(filepath.Dir(path))
			require.NoError(t, err)
			require.Len(t, entries, 1, "WriteFile left a temporary file behind")
		})
	}
}

func TestReadRecordsShortReads(t *testing.T) {
	spec := CIFAR100(LabelsFine)
	recs := testRecords(spec, 3)
	data := encodeByHand(recs)
	for name, r := range map[string]func() *Records{
		"one byte at a time": func() *Records {
			got, err := ReadRecords(iotest.OneByteReader(bytes.NewReader(data)), "x", spec)
			require.NoError(t, err)
			return got
		},
		"half reads": func() *Records {
			got, err := ReadRecords(iotest.HalfReader(bytes.NewReader(data)), "x", spec)
			require.NoError(t, err)
			return got
		},
		"data with EOF": func() *Records {
			got, err := ReadRecords(iotest.DataErrReader(bytes.NewReader(data)), "x", spec)
			require.NoError(t, err)
			return got
		},
	} {
		got := r()
		require.Equal(t, recs.Pixels, got.Pixels, name)
		require.Equal(t, recs.RawLabels, got.RawLabels, name)
	}
	boom := errors.New("disk on fire")
	_, err := ReadRecords(iotest.ErrReader(boom), "broken.bin", spec)
	require.ErrorIs(t, err, boom)
	require.Contains(t, err.Error(), "broken.bin")
	require.Contains(t, err.Error(), "record 0")
}

func TestRecordAccessors(t *testing.T) {
	fine := CIFAR100(LabelsFine)
	recs := NewRecords(fine, "acc", 2)
	recs.RawLabels = []byte{3, 57, 19, 99}
	recs.Pixels[ImageBytes] = 200
	require.Equal(t, 2, recs.Len())
	require.Equal(t, 57, recs.Label(0))
	require.Equal(t, 57, recs.FineLabel(0))
	require.Equal(t, 3, recs.CoarseLabel(0))
	require.Equal(t, 99, recs.Label(1))
	require.Equal(t, 19, recs.CoarseLabel(1))
	require.Equal(t, []int{57, 99}, recs.Labels())
	require.Equal(t, byte(200), recs.Image(1)[0])
	require.Len(t, recs.Image(1), ImageBytes)
	require.Equal(t, ImageBytes, cap(recs.Image(0)), "Image must not expose the next record to append")

	coarse, err := recs.WithSpec(CIFAR100(LabelsCoarse))
	require.NoError(t, err)
	require.Equal(t, []int{3, 19}, coarse.Labels())
	require.Equal(t, 57, coarse.FineLabel(0))
	_, err = recs.WithSpec(CIFAR10())
	require.ErrorContains(t, err, "cannot be viewed as cifar10")

	c10 := NewRecords(CIFAR10(), "c10", 1)
	c10.RawLabels[0] = 7
	require.Equal(t, 7, c10.Label(0))
	require.Equal(t, 7, c10.FineLabel(0))
	require.Equal(t, -1, c10.CoarseLabel(0))
}

func TestLabelHistogramAndChannelStats(t *testing.T) {
	spec := CIFAR10()
	recs := NewRecords(spec, "stats", 4)
	copy(recs.RawLabels, []byte{1, 1, 9, 0})
	const plane = ImageHeight * ImageWidth
	for i := range 4 {
		img := recs.Image(i)
		for p := range plane {
			img[p] = 0          // R
			img[plane+p] = 255  // G
			img[2*plane+p] = 51 // B: 0.2
			if i%2 == 1 && p%2 == 0 {
				img[2*plane+p] = 153 // B: 0.6 on half the pixels of half the images
			}
		}
	}
	require.Equal(t, []int{1, 2, 0, 0, 0, 0, 0, 0, 0, 1}, recs.LabelHistogram())
	mean, std := recs.ChannelStats()
	require.InDelta(t, 0, mean[0], 1e-12)
	require.InDelta(t, 1, mean[1], 1e-12)
	require.InDelta(t, 0.3, mean[2], 1e-12) // 3/4 of pixels 0.2, 1/4 0.6
	require.InDelta(t, 0, std[0], 1e-6)
	require.InDelta(t, 0, std[1], 1e-6)
	require.InDelta(t, 0.17320508, std[2], 1e-6) // sqrt(0.75*0.01 + 0.25*0.09)
}

func writeRaw(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// requireBadFile checks that a file of data is refused as spec's with a *FormatError of kind at
// record and offset, whose message holds contains, as the stream reader refuses its labels.
func requireBadFile(t *testing.T, spec Spec, data []byte, kind error, record int, offset int64, contains []string) {
	path := writeRaw(t, "data.bin", data)
	recs, err := readFile(path, spec)
	require.Nil(t, recs)
	require.ErrorIs(t, err, kind)
	var fe *FormatError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, path, fe.File)
	require.Equal(t, record, fe.Record)
	require.Equal(t, offset, fe.Offset)
	require.Contains(t, err.Error(), path)
	if record >= 0 {
		require.Contains(t, err.Error(), "record "+strconv.Itoa(record)+" at byte offset "+strconv.FormatInt(offset, 10))
	}
	for _, s := range contains {
		require.Contains(t, err.Error(), s)
	}
	// The stream reader agrees on label errors (it cannot know sizes up front).
	if kind == ErrLabelRange {
		_, serr := ReadRecords(bytes.NewReader(data), path, spec)
		require.Equal(t, err.Error(), serr.Error())
	}
}

func TestReadFileBadInput(t *testing.T) {
	c10, c100 := CIFAR10(), CIFAR100(LabelsFine)
	good10 := encodeByHand(testRecords(c10, 3))
	good100 := encodeByHand(testRecords(c100, 3))
	withByte := func(data []byte, off int, v byte) []byte {
		out := append([]byte(nil), data...)
		out[off] = v
		return out
	}
	tests := []struct {
		name     string
		spec     Spec
		data     []byte
		kind     error
		record   int
		offset   int64
		contains []string
	}{
		{"partial record", c10, append(append([]byte(nil), good10[:2*3073]...), make([]byte, 100)...), ErrPartialRecord, 2, 6146,
			[]string{"file size 6246 bytes is not a whole number of 3073-byte cifar10 records (2 whole records and 100 extra bytes)"}},
		{"cifar10 file read as cifar100", c100, good10[:2*3073], ErrPartialRecord, 1, 3074,
			[]string{"the size fits CIFAR-10 records: use the dataset cifar10"}},
		{"cifar100 file read as cifar10", c10, good100[:2*3074], ErrPartialRecord, 2, 6146,
			[]string{"the size fits CIFAR-100 records"}},
		{"label 10 in cifar10", c10, withByte(good10, 3073, 10), ErrLabelRange, 1, 3073,
			[]string{"label byte is 10, outside the cifar10 class range [0, 10)", "is this a CIFAR-100 file"}},
		{"label 255 in cifar10", c10, withByte(good10, 2*3073, 255), ErrLabelRange, 2, 6146,
			[]string{"label byte is 255"}},
		{"coarse label 20", c100, withByte(good100, 2*3074, 20), ErrLabelRange, 2, 6148,
			[]string{"coarse label byte is 20, outside the cifar100 class range [0, 20)"}},
		{"fine label 100", c100, withByte(good100, 1, 100), ErrLabelRange, 0, 1,
			[]string{"fine label byte is 100, outside the cifar100 class range [0, 100)"}},
		{"empty file", c10, nil, ErrNoRecords, -1, 0, []string{"the file is empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { requireBadFile(t, tc.spec, tc.data, tc.kind, tc.record, tc.offset, tc.contains) })
	}
	_, err := readFile(filepath.Join(t.TempDir(), "nope.bin"), c10)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestReadRecordsTruncated(t *testing.T) {
	spec := CIFAR10()
	data := encodeByHand(testRecords(spec, 2))
	tests := []struct {
		length int
		record int
		offset int64
		reason string
	}{
		{1, 0, 1, "ends after 1 of the 3073 bytes"},
		{3072, 0, 3072, "ends after 3072 of the 3073 bytes"},
		{3073 + 10, 1, 3083, "ends after 10 of the 3073 bytes"},
		{2*3073 - 1, 1, 6145, "ends after 3072 of the 3073 bytes"},
	}
	for _, tc := range tests {
		recs, err := ReadRecords(bytes.NewReader(data[:tc.length]), "stream.bin", spec)
		require.Nil(t, recs)
		require.ErrorIs(t, err, ErrTruncated, "length %d", tc.length)
		var fe *FormatError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, tc.record, fe.Record)
		require.Equal(t, tc.offset, fe.Offset)
		require.Contains(t, err.Error(), "stream.bin")
		require.Contains(t, err.Error(), tc.reason)
	}
	_, err := ReadRecords(bytes.NewReader(nil), "empty", spec)
	require.ErrorIs(t, err, ErrNoRecords)
	_, err = ReadRecords(bytes.NewReader(data), "x", Spec{})
	require.ErrorContains(t, err, "invalid Spec")
}

func TestWriteRecordsRefusesBadRecords(t *testing.T) {
	spec := CIFAR100(LabelsFine)
	recs := testRecords(spec, 2)
	recs.RawLabels[3] = 100 // fine label of record 1
	var buf bytes.Buffer
	err := writeRecords(&buf, recs)
	require.ErrorIs(t, err, ErrLabelRange)
	require.Contains(t, err.Error(), "record 1 at byte offset 3075")
	require.Zero(t, buf.Len())

	recs = testRecords(spec, 2)
	recs.RawLabels = recs.RawLabels[:3]
	require.ErrorIs(t, writeRecords(&buf, recs), ErrInconsistent)
	require.ErrorIs(t, writeRecords(&buf, NewRecords(spec, "none", 0)), ErrNoRecords)

	path := filepath.Join(t.TempDir(), "bad.bin")
	require.Error(t, writeFile(path, recs))
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "a failed WriteFile must not leave a file")
	entries, _ := os.ReadDir(filepath.Dir(path))
	require.Empty(t, entries, "a failed WriteFile must remove its temporary file")
}

func TestLoadSplit(t *testing.T) {
	spec := CIFAR10()
	root := t.TempDir()
	all := testRecords(spec, 11)
	sizes := []int{2, 2, 2, 2, 3}
	first := 0
	for k, name := range spec.TrainFiles {
		part := &Records{Spec: spec, Source: name,
			Pixels:    all.Pixels[first*ImageBytes : (first+sizes[k])*ImageBytes],
			RawLabels: all.RawLabels[first : first+sizes[k]]}
		require.NoError(t, writeFile(filepath.Join(root, spec.Dir, name), part))
		first += sizes[k]
	}
	got, err := LoadSplit(root, spec, SplitTrain)
	require.NoError(t, err)
	require.Equal(t, 11, got.Len())
	require.Equal(t, all.Pixels, got.Pixels)
	require.Equal(t, all.RawLabels, got.RawLabels)
	require.Contains(t, got.Source, "data_batch_1.bin..data_batch_5.bin")

	_, err = LoadSplit(root, spec, SplitTest)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, filepath.Join(root, spec.Dir, "test_batch.bin")+" is missing")
	require.ErrorContains(t, err, "cifarlab download --dataset cifar10 --data "+root)
	require.ErrorContains(t, err, "cifarlab synth --dataset cifar10 --out "+root)

	// A bad label in the third file is reported with that file's own record index.
	bad := filepath.Join(root, spec.Dir, "data_batch_3.bin")
	data, err := os.ReadFile(bad)
	require.NoError(t, err)
	data[3073] = 12
	require.NoError(t, os.WriteFile(bad, data, 0o644))
	_, err = LoadSplit(root, spec, SplitTrain)
	var fe *FormatError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, bad, fe.File)
	require.Equal(t, 1, fe.Record)
	require.Equal(t, int64(3073), fe.Offset)

	// A partial file is refused before anything is read.
	require.NoError(t, os.WriteFile(bad, data[:100], 0o644))
	_, err = LoadSplit(root, spec, SplitTrain)
	require.ErrorIs(t, err, ErrPartialRecord)
	require.ErrorContains(t, err, bad)
}

func TestSplitAndSuperclasses(t *testing.T) {
	require.Equal(t, "train", SplitTrain.String())
	require.Equal(t, "test", SplitTest.String())
	s, err := ParseSplit("test")
	require.NoError(t, err)
	require.Equal(t, SplitTest, s)
	_, err = ParseSplit("val")
	require.Error(t, err)

	fine := CIFAR100(LabelsFine)
	coarse := CIFAR100(LabelsCoarse)
	perCoarse := make([]int, 20)
	for f := range 100 {
		c := CIFAR100CoarseOf(f)
		require.GreaterOrEqual(t, c, 0, "fine %d (%s) has no superclass", f, fine.ClassNames[f])
		perCoarse[c]++
	}
	for c, n := range perCoarse {
		require.Equal(t, 5, n, "coarse %d (%s)", c, coarse.ClassNames[c])
	}
	name := func(f string) string {
		for i, n := range fine.ClassNames {
			if n == f {
				return coarse.ClassNames[CIFAR100CoarseOf(i)]
			}
		}
		return ""
	}
	require.Equal(t, "aquatic_mammals", name("whale"))
	require.Equal(t, "vehicles_2", name("tractor"))
	require.Equal(t, "trees", name("willow_tree"))
	require.Equal(t, "people", name("baby"))
	require.Equal(t, "fruit_and_vegetables", name("sweet_pepper"))
	require.Equal(t, 0, CIFAR100CoarseOf(4)) // beaver
	require.Equal(t, -1, CIFAR100CoarseOf(100))
	require.Equal(t, []int{4, 30, 55, 72, 95}, cifar100FinesOf(0))
	require.Nil(t, cifar100FinesOf(20))
}
