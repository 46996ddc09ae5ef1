package data

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tarEntry describes one entry of a test archive.
type tarEntry struct {
	name     string
	typ      byte
	body     []byte
	size     int64 // declared size; -1 means len(body)
	linkname string
}

// buildTar writes entries as a tar stream. A declared size larger than the body produces a
// truncated archive (the writer is not closed properly then).
func buildTar(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		size := e.size
		if size < 0 {
			size = int64(len(e.body))
		}
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Size: size, Mode: 0o644, Linkname: e.linkname}
		if e.typ == tar.TypeDir || e.typ == tar.TypeSymlink || e.typ == tar.TypeLink || e.typ == tar.TypeFifo || e.typ == tar.TypeChar {
			hdr.Size = 0
			hdr.Mode = 0o755
		}
		require.NoError(t, tw.WriteHeader(hdr))
		if hdr.Size > 0 {
			_, err := tw.Write(e.body)
			require.NoError(t, err)
			if int64(len(e.body)) < hdr.Size {
				tw.Flush() //nolint:errcheck // deliberately truncated
				return buf.Bytes()
			}
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func gzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// smallSpec returns spec shrunk to 2 records per train file and 3 test records, as test
// archives are built.
func smallSpec(spec Spec) Spec {
	spec.TrainSize = 2 * len(spec.TrainFiles)
	spec.TestSize = 3
	return spec
}

// archiveFiles returns the content of each data file of a small spec (relative to spec.Dir).
func archiveFiles(spec Spec) map[string][]byte {
	files := map[string][]byte{}
	for _, split := range []Split{SplitTrain, SplitTest} {
		names := split.Files(spec)
		recs := testRecords(spec, split.Size(spec))
		all := encodeByHand(recs)
		n := recs.Len()
		for k, name := range names {
			lo, hi := k*n/len(names), (k+1)*n/len(names)
			files[name] = all[lo*spec.RecordBytes() : hi*spec.RecordBytes()]
		}
	}
	return files
}

// goodEntries lays out a small spec's archive like the official one: the folder entry,
// the data files and the metadata text files.
func goodEntries(spec Spec) []tarEntry {
	entries := []tarEntry{{name: spec.Dir + "/", typ: tar.TypeDir}}
	files := archiveFiles(spec)
	meta := "batches.meta.txt"
	if spec.Name == "cifar100" {
		meta = "fine_label_names.txt"
	}
	entries = append(entries, tarEntry{name: spec.Dir + "/" + meta, typ: tar.TypeReg,
		body: []byte(strings.Join(spec.ClassNames, "\n") + "\n"), size: -1})
	for _, name := range append(append([]string(nil), spec.TrainFiles...), spec.TestFiles...) {
		entries = append(entries, tarEntry{name: spec.Dir + "/" + name, typ: tar.TypeReg, body: files[name], size: -1})
	}
	return entries
}

// listTree returns the paths (relative, slash-separated) of everything under root.
func listTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == root {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if d.Type()&fs.ModeSymlink != 0 {
			rel += " -> symlink"
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	}))
	return out
}

func TestExtractGoodArchive(t *testing.T) {
	for _, base := range []Spec{CIFAR10(), CIFAR100(LabelsFine)} {
		spec := smallSpec(base)
		root := t.TempDir()
		files, err := extractTarGz(bytes.NewReader(gzipBytes(t, buildTar(t, goodEntries(spec)))), root, spec)
		require.NoError(t, err)
		want := map[string]int64{}
		for name, data := range archiveFiles(spec) {
			want[name] = int64(len(data))
			got, err := os.ReadFile(filepath.Join(root, spec.Dir, name))
			require.NoError(t, err)
			require.True(t, bytes.Equal(data, got), name)
		}
		require.Equal(t, want, files)
		meta := "batches.meta.txt"
		if base.Name == "cifar100" {
			meta = "fine_label_names.txt"
		}
		expected := []string{spec.Dir, spec.Dir + "/" + meta}
		for name := range want {
			expected = append(expected, spec.Dir+"/"+name)
		}
		require.ElementsMatch(t, expected, listTree(t, root), "staging folder or stray files left behind")
		recs, err := LoadSplit(root, spec, SplitTrain)
		require.NoError(t, err)
		require.Equal(t, spec.TrainSize, recs.Len())
	}
}

// replaceEntry is entries with the entry called name replaced by e.
func replaceEntry(entries []tarEntry, name string, e tarEntry) []tarEntry {
	out := append([]tarEntry(nil), entries...)
	for i := range out {
		if out[i].name == name {
			out[i] = e
		}
	}
	return out
}

// withoutEntry is entries without the entry called name.
func withoutEntry(entries []tarEntry, name string) []tarEntry {
	var out []tarEntry
	for _, e := range entries {
		if e.name != name {
			out = append(out, e)
		}
	}
	return out
}

// requireRefusedArchive extracts an archive of entries over the data of an earlier install and
// checks that it is refused with an error of kind that says contains, leaving that data as it
// was and nothing outside the root (nor at outside).
func requireRefusedArchive(t *testing.T, spec Spec, entries []tarEntry, kind error, contains, outside string) {
	root := filepath.Join(t.TempDir(), "root")
	dir := filepath.Join(root, spec.Dir)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	// Data from an earlier install must survive a refused archive untouched.
	old := []byte("previous content")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "test_batch.bin"), old, 0o644))

	_, err := extractTarGz(bytes.NewReader(gzipBytes(t, buildTar(t, entries))), root, spec)
	require.ErrorIs(t, err, kind)
	require.ErrorContains(t, err, contains)
	require.Equal(t, []string{spec.Dir, spec.Dir + "/test_batch.bin"}, listTree(t, root))
	got, err := os.ReadFile(filepath.Join(dir, "test_batch.bin"))
	require.NoError(t, err)
	require.Equal(t, old, got)
	_, err = os.Lstat(outside)
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Lstat(filepath.Join(root, "..", "escaped"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestExtractRefusesHostileEntries(t *testing.T) {
	spec := smallSpec(CIFAR10())
	good := goodEntries(spec)
	data1 := archiveFiles(spec)["data_batch_1.bin"]
	badLabel := append([]byte(nil), data1...)
	badLabel[3073] = 10 // label of record 1
	with := func(extra ...tarEntry) []tarEntry { return append(append([]tarEntry(nil), good...), extra...) }
	replace := func(name string, e tarEntry) []tarEntry { return replaceEntry(good, name, e) }
	without := func(name string) []tarEntry { return withoutEntry(good, name) }
	outside := filepath.Join(t.TempDir(), "escaped")
	tests := []struct {
		name     string
		entries  []tarEntry
		kind     error
		contains string
	}{
		{"absolute path", with(tarEntry{name: outside, typ: tar.TypeReg, body: []byte("x"), size: -1}), ErrUnsafeArchive, "has an absolute path"},
		{"dot-dot", with(tarEntry{name: spec.Dir + "/../../escaped", typ: tar.TypeReg, body: []byte("x"), size: -1}), ErrUnsafeArchive, `contains ".."`},
		{"dot-dot that cleans inside", with(tarEntry{name: spec.Dir + "/x/../readme.html", typ: tar.TypeReg, body: []byte("x"), size: -1}), ErrUnsafeArchive, `contains ".."`},
		{"symlink", with(tarEntry{name: spec.Dir + "/readme.html", typ: tar.TypeSymlink, linkname: "/etc/passwd"}), ErrUnsafeArchive, `is a link (to "/etc/passwd")`},
		{"symlink replacing a data file", replace(spec.Dir+"/data_batch_1.bin", tarEntry{name: spec.Dir + "/data_batch_1.bin", typ: tar.TypeSymlink, linkname: "../../x"}), ErrUnsafeArchive, "links are not allowed"},
		{"hard link", with(tarEntry{name: spec.Dir + "/readme.html", typ: tar.TypeLink, linkname: spec.Dir + "/test_batch.bin"}), ErrUnsafeArchive, "is a link"},
		{"fifo", with(tarEntry{name: spec.Dir + "/readme.html", typ: tar.TypeFifo}), ErrUnsafeArchive, "only regular files are allowed"},
		{"oversize data file", replace(spec.Dir+"/data_batch_1.bin", tarEntry{name: spec.Dir + "/data_batch_1.bin", typ: tar.TypeReg, body: append(append([]byte(nil), data1...), 0), size: -1}), ErrUnsafeArchive, "has 6147 bytes, but the cifar10 data file data_batch_1.bin has 6146"},
		{"undersize data file", replace(spec.Dir+"/data_batch_1.bin", tarEntry{name: spec.Dir + "/data_batch_1.bin", typ: tar.TypeReg, body: data1[:3073], size: -1}), ErrUnsafeArchive, "has 3073 bytes"},
		{"oversize metadata", with(tarEntry{name: spec.Dir + "/readme.html", typ: tar.TypeReg, body: make([]byte, maxMetadataBytes+1), size: -1}), ErrUnsafeArchive, "more than the 1048576 allowed"},
		{"unexpected name", with(tarEntry{name: spec.Dir + "/evil.sh", typ: tar.TypeReg, body: []byte("rm -rf"), size: -1}), ErrUnsafeArchive, "is not a file of the cifar10 archive"},
		{"file outside the folder", with(tarEntry{name: "data_batch_1.bin", typ: tar.TypeReg, body: data1, size: -1}), ErrUnsafeArchive, "is outside cifar-10-batches-bin/"},
		{"nested folder", with(tarEntry{name: spec.Dir + "/sub/test_batch.bin", typ: tar.TypeReg, body: []byte("x"), size: -1}), ErrUnsafeArchive, "is outside"},
		{"unexpected directory", with(tarEntry{name: "other/", typ: tar.TypeDir}), ErrUnsafeArchive, "is an unexpected directory"},
		{"backslash", with(tarEntry{name: spec.Dir + `\..\..\x`, typ: tar.TypeReg, body: []byte("x"), size: -1}), ErrUnsafeArchive, "backslash"},
		{"duplicate", with(good[2]), ErrUnsafeArchive, "appears twice"},
		{"missing data file", without(spec.Dir + "/test_batch.bin"), ErrIncompleteArchive, "it has no cifar-10-batches-bin/test_batch.bin"},
		{"truncated entry", replace(spec.Dir+"/test_batch.bin", tarEntry{name: spec.Dir + "/test_batch.bin", typ: tar.TypeReg, body: make([]byte, 100), size: 3 * 3073}), ErrIncompleteArchive, "entry \"cifar-10-batches-bin/test_batch.bin\" ends after"},
		{"label out of range", replace(spec.Dir+"/data_batch_1.bin", tarEntry{name: spec.Dir + "/data_batch_1.bin", typ: tar.TypeReg, body: badLabel, size: -1}), ErrLabelRange, "record 1 at byte offset 3073"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { requireRefusedArchive(t, spec, tc.entries, tc.kind, tc.contains, outside) })
	}
}

func TestExtractRejectsNonGzip(t *testing.T) {
	spec := smallSpec(CIFAR10())
	root := t.TempDir()
	_, err := extractTarGz(bytes.NewReader([]byte("<html>not found</html>")), root, spec)
	require.ErrorContains(t, err, "cifar-10-binary.tar.gz is not a gzip archive")
	// A gzip stream cut short fails its trailer check even if the tar part looked complete.
	full := gzipBytes(t, buildTar(t, goodEntries(spec)))
	_, err = extractTarGz(bytes.NewReader(full[:len(full)-4]), root, spec)
	require.Error(t, err)
	require.Empty(t, listTree(t, root))
}
