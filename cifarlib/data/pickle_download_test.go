package data

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// pythonEntries returns the tar entries of a small python-layout archive of spec (sizes of
// smallSpec), with files replaced by override.
func pythonEntries(spec Spec, override map[string][]byte) []tarEntry {
	py := spec.InLayout(LayoutPython)
	entries := []tarEntry{{name: py.Dir + "/", typ: tar.TypeDir}}
	extra := "readme.html"
	if spec.Name == "cifar100" {
		extra = "file.txt~"
	}
	entries = append(entries, tarEntry{name: py.Dir + "/" + extra, typ: tar.TypeReg, body: []byte("metadata\n"), size: -1})
	files := pythonFolderFiles(spec)
	for name, body := range override {
		files[name] = body
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		entries = append(entries, tarEntry{name: py.Dir + "/" + name, typ: tar.TypeReg, body: files[name], size: -1})
	}
	return entries
}

func TestDownloadPythonLayout(t *testing.T) {
	for _, base := range []Spec{CIFAR10(), CIFAR100(LabelsFine)} {
		t.Run(base.Name, func(t *testing.T) {
			spec := smallSpec(base)
			py := spec.InLayout(LayoutPython)
			archive := gzipBytes(t, buildTar(t, pythonEntries(spec, nil)))
			sum := sha256Hex(archive)
			srv := newArchiveServer(t, archive, nil)
			root := t.TempDir()
			url := srv.URL + "/" + py.ArchiveName
			var progress bytes.Buffer
			opts := DownloadOptions{URL: url, SHA256: sum, Layout: LayoutPython, Progress: &progress}
			require.NoError(t, Download(context.Background(), root, spec, opts))
			require.Contains(t, progress.String(), py.ArchiveName+" 100%")
			py.ArchiveSHA256 = sum
			require.NoError(t, Verify(root, py))

			var info VerifiedInfo
			raw, err := os.ReadFile(filepath.Join(root, py.Dir, VerifiedMarker))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &info))
			require.Equal(t, py.ArchiveName, info.Archive)
			require.Equal(t, sum, info.SHA256)
			for name, body := range pythonFolderFiles(spec) {
				require.Equal(t, int64(len(body)), info.Files[name], name)
			}
			require.Len(t, info.Files, len(pythonFolderFiles(spec)))

			layout, err := DetectLayout(root, spec)
			require.NoError(t, err)
			require.Equal(t, LayoutPython, layout)
			for _, split := range []Split{SplitTrain, SplitTest} {
				recs, err := LoadSplit(root, spec, split)
				require.NoError(t, err)
				want := testRecords(spec, split.Size(spec))
				require.Equal(t, want.Pixels, recs.Pixels)
				require.Equal(t, want.RawLabels, recs.RawLabels)
				require.Equal(t, spec.ClassNames, recs.Spec.ClassNames)
			}

			// Again: verified data present, nothing fetched.
			progress.Reset()
			require.NoError(t, Download(context.Background(), root, spec, opts))
			require.Equal(t, int32(1), srv.requests.Load())
			require.Contains(t, progress.String(), "verified data already present")

			// A damaged file is no longer verified; Download repairs it from the kept archive.
			require.NoError(t, os.Truncate(filepath.Join(root, py.Dir, py.TestFiles[0]), 100))
			require.ErrorIs(t, Verify(root, py), ErrNotVerified)
			require.NoError(t, Download(context.Background(), root, spec, opts))
			require.Equal(t, int32(1), srv.requests.Load())
			require.NoError(t, Verify(root, py))
		})
	}
}

// TestDownloadPythonHostile serves archives whose checksum matches but whose pickles are
// hostile or wrong: every pickle is decoded before anything is installed.
func TestDownloadPythonHostile(t *testing.T) {
	spec := smallSpec(CIFAR10())
	badLabels := testRecords(spec, 2)
	badLabels.RawLabels[1] = 10
	evil, err := os.ReadFile(pickleFixture("evil_posix_system_p2"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		override map[string][]byte
		kind     error
		contains string
	}{
		{"label out of range", map[string][]byte{"data_batch_2": py2Batch(badLabels)}, ErrLabelRange,
			"cifar-10-python.tar.gz:cifar-10-batches-py/data_batch_2: key \"labels\": record 1: value 10: label outside"},
		{"posix.system", map[string][]byte{"data_batch_1": evil}, ErrUnsafePickle,
			"cifar-10-python.tar.gz:cifar-10-batches-py/data_batch_1: at byte offset 2: value posix.system: global not allowed"},
		{"record count", map[string][]byte{"test_batch": py2Batch(testRecords(spec, 2))}, ErrPickleLayout,
			"the cifar10 archive's file has 3 records"},
		{"meta", map[string][]byte{"batches.meta": py2Meta(CIFAR100(LabelsFine))}, ErrPickleLayout, "want label_names"},
		{"truncated", map[string][]byte{"data_batch_5": py2Batch(testRecords(spec, 2))[:5000]}, ErrTruncated, "data_batch_5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			archive := gzipBytes(t, buildTar(t, pythonEntries(spec, tc.override)))
			srv := newArchiveServer(t, archive, nil)
			root := t.TempDir()
			err := Download(context.Background(), root, spec, DownloadOptions{URL: srv.URL + "/x", SHA256: sha256Hex(archive), Layout: LayoutPython})
			require.ErrorIs(t, err, tc.kind)
			require.ErrorContains(t, err, tc.contains)
			require.Equal(t, []string{"cifar-10-python.tar.gz"}, listTree(t, root), "nothing may be extracted from a refused archive")
		})
	}

	// An unknown file in the archive, and a pickle larger than any CIFAR batch, are refused as entries.
	entries := append(pythonEntries(spec, nil), tarEntry{name: "cifar-10-batches-py/evil.py", typ: tar.TypeReg, body: []byte("x"), size: -1})
	_, err = extractTar(bytes.NewReader(buildTar(t, entries)), t.TempDir(), spec.InLayout(LayoutPython))
	require.ErrorIs(t, err, ErrUnsafeArchive)
	require.ErrorContains(t, err, `entry "cifar-10-batches-py/evil.py" is not a file of the cifar10 archive`)
	entries = append(pythonEntries(spec, nil)[:2], tarEntry{name: "cifar-10-batches-py/data_batch_1", typ: tar.TypeReg,
		size: maxPickleFileBytes + 1, body: []byte{0x80}})
	_, err = extractTar(bytes.NewReader(buildTar(t, entries)), t.TempDir(), spec.InLayout(LayoutPython))
	require.ErrorIs(t, err, ErrUnsafeArchive)
	require.ErrorContains(t, err, "has at most")
}
