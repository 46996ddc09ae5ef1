package data

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// fuzzSpecs are the specs FuzzReadRecords picks from with its second argument.
var fuzzSpecs = []Spec{CIFAR10(), CIFAR100(LabelsFine), CIFAR100(LabelsCoarse)}

// checkDecodeStreamAgrees checks the streaming decoder on fuzzed data against ReadRecords'
// result (recs, err): the same error, else the same images and labels.
func checkDecodeStreamAgrees(t *testing.T, spec Spec, data []byte, recs *Records, err error) {
	rb := spec.RecordBytes()
	// The streaming decoder sees whole records only (decodeFile checks the size first).
	if len(data) == 0 || len(data)%rb != 0 {
		return
	}
	n := len(data) / rb
	norm, nerr := specNormalizer(spec)
	require.NoError(t, nerr)
	images, labels := make([]float32, n*ImageBytes), make([]int32, n)
	derr := decodeStream(bytes.NewReader(data), "fuzz", spec, norm, n, images, labels)
	if err != nil {
		require.EqualError(t, derr, err.Error(), "the decoder and the reader disagree")
		return
	}
	require.NoError(t, derr)
	want := make([]float32, n*ImageBytes)
	norm.DecodeImages(recs, 0, n, want)
	require.True(t, slices.Equal(want, images))
	for i := range n {
		require.Equal(t, int32(recs.Label(i)), labels[i])
	}
}

// FuzzReadRecords feeds arbitrary bytes to ReadRecords and to the streaming decoder behind
// decodeFile. Neither may panic; both must agree; accepted input must round-trip byte for
// byte; rejected input must get a *FormatError that points inside the data.
func FuzzReadRecords(f *testing.F) {
	for _, seed := range readRecordsSeeds() {
		f.Add(seed.data, seed.which)
	}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		spec := fuzzSpecs[int(which)%len(fuzzSpecs)]
		rb := spec.RecordBytes()
		recs, err := ReadRecords(bytes.NewReader(data), "fuzz", spec)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error is not a *FormatError: %v", err)
			}
			if fe.Offset < 0 || fe.Offset > int64(len(data)) || fe.Record < -1 || fe.File != "fuzz" {
				t.Fatalf("error points outside the data (%d bytes): %+v", len(data), fe)
			}
			switch {
			case errors.Is(err, ErrNoRecords):
				require.Empty(t, data)
			case errors.Is(err, ErrTruncated):
				require.NotZero(t, len(data)%rb)
				require.Equal(t, int64(len(data)), fe.Offset, "a truncation is reported where the data ends")
			case errors.Is(err, ErrLabelRange):
				j := int(fe.Offset % int64(rb))
				require.Less(t, j, spec.LabelBytes)
				require.GreaterOrEqual(t, int(data[fe.Offset]), spec.MaxLabels[j])
			default:
				t.Fatalf("unexpected error kind: %v", err)
			}
		} else {
			require.Equal(t, len(data)/rb, recs.Len())
			require.Zero(t, len(data)%rb)
			var buf bytes.Buffer
			require.NoError(t, writeRecords(&buf, recs))
			require.True(t, bytes.Equal(data, buf.Bytes()), "round trip changed the bytes")
			for i := range recs.Len() {
				require.Less(t, recs.Label(i), spec.NumClasses)
			}
		}

		checkDecodeStreamAgrees(t, spec, data, recs, err)
	})
}

// fuzzExtractSpec is CIFAR-10 reduced to one one-record file per split, to keep archives small.
func fuzzExtractSpec() Spec {
	s := CIFAR10()
	s.TrainFiles, s.TestFiles = []string{"data_batch_1.bin"}, []string{"test_batch.bin"}
	s.TrainSize, s.TestSize = 1, 1
	return s
}

// FuzzExtract feeds arbitrary bytes (a tar stream, or gzip if it starts with the gzip magic)
// to the archive extractor. It must never panic, never create anything outside
// root/spec.Dir, never create links, and on error never install anything.
func FuzzExtract(f *testing.F) {
	for _, seed := range extractSeeds(f) {
		f.Add(seed)
	}
	spec := fuzzExtractSpec()
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		var err error
		if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			_, err = extractTarGz(bytes.NewReader(data), root, spec)
		} else {
			_, err = extractTar(bytes.NewReader(data), root, spec)
		}
		var found []string
		walkErr := filepath.WalkDir(root, func(path string, d fs.DirEntry, werr error) error {
			if werr != nil {
				return werr
			}
			rel, _ := filepath.Rel(root, path)
			if rel == "." {
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 || (!d.IsDir() && !d.Type().IsRegular()) {
				t.Fatalf("extraction created a link or special file: %s", rel)
			}
			if d.IsDir() && rel != spec.Dir {
				t.Fatalf("extraction left a folder: %s", rel)
			}
			if !d.IsDir() {
				if filepath.Dir(rel) != spec.Dir {
					t.Fatalf("extraction wrote outside %s: %s", spec.Dir, rel)
				}
				found = append(found, filepath.Base(rel))
			}
			return nil
		})
		require.NoError(t, walkErr)
		if err != nil {
			require.Empty(t, found, "a refused archive installed files: %v (error: %v)", found, err)
			return
		}
		for name, size := range expectedFiles(spec) {
			fi, serr := os.Stat(filepath.Join(root, spec.Dir, name))
			require.NoError(t, serr)
			require.Equal(t, size, fi.Size())
		}
		_, err = LoadSplit(root, spec, SplitTrain)
		require.NoError(t, err, "an accepted archive must hold valid records")
	})
}

// readRecordsSeed is one seed of FuzzReadRecords.
type readRecordsSeed struct {
	name  string
	data  []byte
	which uint8
}

// readRecordsSeeds are small valid and invalid inputs for FuzzReadRecords.
func readRecordsSeeds() []readRecordsSeed {
	c10 := encodeByHand(testRecords(CIFAR10(), 2))
	c100 := encodeByHand(testRecords(CIFAR100(LabelsFine), 2))
	badLabel := append([]byte(nil), c10...)
	badLabel[3073] = 10
	badFine := append([]byte(nil), c100...)
	badFine[1] = 100
	return []readRecordsSeed{
		{"cifar10-two-records", c10, 0},
		{"cifar100-two-records", c100, 1},
		{"cifar100-coarse-two-records", c100, 2},
		{"truncated", c10[:3073+100], 0},
		{"label-out-of-range", badLabel, 0},
		{"fine-label-out-of-range", badFine, 1},
		{"cifar10-read-as-cifar100", c10, 1},
		{"empty", []byte{}, 0},
	}
}

// extractSeeds are small archives for FuzzExtract: a good one (plain and gzip) and hostile ones.
func extractSeeds(tb testing.TB) map[string][]byte {
	spec := fuzzExtractSpec()
	rec := encodeByHand(testRecords(spec, 1))
	good := []tarEntry{
		{name: spec.Dir + "/", typ: tar.TypeDir},
		{name: spec.Dir + "/batches.meta.txt", typ: tar.TypeReg, body: []byte("airplane\n"), size: -1},
		{name: spec.Dir + "/data_batch_1.bin", typ: tar.TypeReg, body: rec, size: -1},
		{name: spec.Dir + "/test_batch.bin", typ: tar.TypeReg, body: rec, size: -1},
	}
	with := func(e tarEntry) []tarEntry { return append(slices.Clone(good[:3]), e) }
	return map[string][]byte{
		"good":          buildTar(tb, good),
		"good-gzip":     gzipBytes(tb, buildTar(tb, good)),
		"symlink":       buildTar(tb, with(tarEntry{name: spec.Dir + "/test_batch.bin", typ: tar.TypeSymlink, linkname: "/etc/passwd"})),
		"hardlink":      buildTar(tb, with(tarEntry{name: spec.Dir + "/test_batch.bin", typ: tar.TypeLink, linkname: spec.Dir + "/data_batch_1.bin"})),
		"dotdot":        buildTar(tb, with(tarEntry{name: spec.Dir + "/../test_batch.bin", typ: tar.TypeReg, body: rec, size: -1})),
		"absolute":      buildTar(tb, with(tarEntry{name: "/tmp/test_batch.bin", typ: tar.TypeReg, body: rec, size: -1})),
		"oversize":      buildTar(tb, with(tarEntry{name: spec.Dir + "/test_batch.bin", typ: tar.TypeReg, body: append(slices.Clone(rec), 0), size: -1})),
		"unexpected":    buildTar(tb, with(tarEntry{name: spec.Dir + "/x.sh", typ: tar.TypeReg, body: []byte("x"), size: -1})),
		"truncated":     buildTar(tb, with(tarEntry{name: spec.Dir + "/test_batch.bin", typ: tar.TypeReg, body: rec[:10], size: int64(len(rec))})),
		"duplicate":     buildTar(tb, append(slices.Clone(good), good[2])),
		"bad-label":     buildTar(tb, with(tarEntry{name: spec.Dir + "/test_batch.bin", typ: tar.TypeReg, body: append([]byte{10}, rec[1:]...), size: -1})),
		"not-a-tarball": []byte("<html>404 Not Found</html>"),
	}
}

// fuzzSeedFiles renders the seeds in the `go test fuzz v1` corpus format, keyed by their
// path under testdata/fuzz.
func fuzzSeedFiles(tb testing.TB) map[string]string {
	files := map[string]string{}
	for _, s := range readRecordsSeeds() {
		files["FuzzReadRecords/"+s.name] = fmt.Sprintf("go test fuzz v1\n[]byte(%s)\nuint8(%d)\n", strconv.Quote(string(s.data)), s.which)
	}
	for name, data := range extractSeeds(tb) {
		files["FuzzExtract/"+name] = fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(data)))
	}
	return files
}

// TestFuzzSeedsCommitted checks that the committed corpus under testdata/fuzz holds the
// current seeds. Run with CIFARLAB_UPDATE_FUZZ_SEEDS=1 to rewrite them.
func TestFuzzSeedsCommitted(t *testing.T) {
	update := os.Getenv("CIFARLAB_UPDATE_FUZZ_SEEDS") == "1"
	for rel, want := range fuzzSeedFiles(t) {
		path := filepath.Join("testdata", "fuzz", filepath.FromSlash(rel))
		if update {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
			continue
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err, "missing seed: run CIFARLAB_UPDATE_FUZZ_SEEDS=1 go test -run TestFuzzSeedsCommitted ./cifarlib")
		require.True(t, string(got) == want, "seed %s is stale: rerun with CIFARLAB_UPDATE_FUZZ_SEEDS=1", rel)
	}
}
