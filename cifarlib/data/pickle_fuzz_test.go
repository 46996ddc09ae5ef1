package data

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReadPickle feeds arbitrary bytes to the pickle reader (batch files, and meta files when
// which/3 is odd). It may not panic, allocate beyond the input's size or accept anything but a
// CIFAR batch; a refusal is a *PickleError that names the input and points inside it; an
// accepted batch is valid and round-trips through the Python 2 writer. Seeds: the committed
// Python-written fixtures and testdata/fuzz/FuzzReadPickle.
func FuzzReadPickle(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "pickles", "*.pkl"))
	require.NoError(f, err)
	for _, path := range paths {
		data, err := os.ReadFile(path)
		require.NoError(f, err)
		f.Add(data, uint8(0))
		f.Add(data, uint8(1))
	}
	f.Add(py2Batch(testRecords(CIFAR10(), 3)), uint8(0))
	f.Add(py2Meta(CIFAR100(LabelsFine)), uint8(4))
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		spec := fuzzSpecs[int(which)%len(fuzzSpecs)]
		meta := (which/3)%2 == 1
		var recs *Records
		var err error
		if meta {
			var names []string
			names, err = readPickleMeta(bytes.NewReader(data), int64(len(data)), "fuzz", spec)
			if err == nil {
				require.Len(t, names, spec.NumClasses)
			}
		} else {
			recs, err = readPickle(bytes.NewReader(data), int64(len(data)), "fuzz", spec)
		}
		if err != nil {
			var pe *PickleError
			if !errors.As(err, &pe) {
				t.Fatalf("error is not a *PickleError: %v", err)
			}
			if pe.File != "fuzz" || pe.Offset < -1 || pe.Offset > int64(len(data)) || pe.Record < -1 {
				t.Fatalf("error points outside the input (%d bytes): %+v", len(data), pe)
			}
			known := false
			for _, kind := range []error{ErrUnsafePickle, ErrPickleLayout, ErrTruncated, ErrLabelRange, ErrNoRecords} {
				known = known || errors.Is(err, kind)
			}
			if !known {
				t.Fatalf("unknown error kind: %v", err)
			}
			return
		}
		if meta {
			return
		}
		require.NoError(t, recs.Validate())
		require.Positive(t, recs.Len())
		again := py2Batch(recs)
		back, err := readPickle(bytes.NewReader(again), int64(len(again)), "again", spec)
		require.NoError(t, err)
		require.Equal(t, recs.Pixels, back.Pixels)
		require.Equal(t, recs.RawLabels, back.RawLabels)
	})
}
