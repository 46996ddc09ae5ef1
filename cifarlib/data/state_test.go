package data

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// realBinaryFolder writes spec's splits in the binary format into root/spec.Dir with no
// marker of any kind: real-layout data with no download record, as a copied folder has.
func realBinaryFolder(t *testing.T, root string, spec Spec) {
	t.Helper()
	for name, body := range archiveFiles(spec) {
		require.NoError(t, os.MkdirAll(filepath.Join(root, spec.Dir), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, spec.Dir, name), body, 0o644))
	}
}

// stateCase is a data folder of TestStateOf: how it is made, and the State it has.
type stateCase struct {
	name     string
	setup    func(t *testing.T, root string)
	kind     string
	loadRoot func(root string) string
	layout   Layout
	line     func(root string) string
}

// stateCases are the folders of TestStateOf, of spec, archive its download.
func stateCases(spec Spec, archive []byte) []stateCase {
	return []stateCase{
		{"empty folder", func(*testing.T, string) {}, KindNone, func(string) string { return "" }, LayoutBinary,
			func(root string) string {
				return "cifar10: no data in " + root + " (neither cifar-10-batches-bin/ nor cifar-10-batches-py/); " +
					"the notebooks use synthetic data until you run: cifarlab download --dataset cifar10 --data " + root
			}},
		{"binary folder without a download record", func(t *testing.T, root string) { realBinaryFolder(t, root, spec) },
			KindUnverified, func(root string) string { return root }, LayoutBinary,
			func(root string) string {
				return "cifar10: real, unverified (binary layout, in " + filepath.Join(root, spec.Dir) + "): not checked against the official checksums; " +
					"check it with: cifarlab verify --data " + root + " --dataset cifar10"
			}},
		{"binary subset (fewer images than the official files)", func(t *testing.T, root string) {
			realBinaryFolder(t, root, spec)
			batch := filepath.Join(root, spec.Dir, spec.TrainFiles[0])
			require.NoError(t, os.Truncate(batch, int64(spec.RecordBytes()))) // 1 of its 2 images
		}, KindUnverified, func(root string) string { return root }, LayoutBinary,
			func(root string) string {
				return "cifar10: real, unverified (binary layout, in " + filepath.Join(root, spec.Dir) + "): a subset or a conversion, not the official files " +
					"(9 training and 3 test images; the official files hold 10 and 3), so no official checksum covers it and `cifarlab verify` " +
					"can only confirm that; it is used as real data"
			}},
		{"python folder without a download record", func(t *testing.T, root string) { writePythonFolder(t, root, spec) },
			KindUnverified, func(root string) string { return root }, LayoutPython,
			func(root string) string {
				return "cifar10: real, unverified (python layout, in " + filepath.Join(root, "cifar-10-batches-py") + "): not checked against the official checksums; " +
					"check it with: cifarlab verify --data " + root + " --dataset cifar10"
			}},
		{"verified download", func(t *testing.T, root string) {
			require.NoError(t, extractArchiveForTest(root, spec, archive))
		}, KindVerified, func(root string) string { return root }, LayoutBinary,
			func(root string) string {
				return "cifar10: real, verified (binary layout, in " + filepath.Join(root, spec.Dir) + ")"
			}},
		{"synthetic stand-in", func(t *testing.T, root string) {
			_, err := Prepare(root, spec, SynthOptions{TrainSize: 10, TestSize: 5})
			require.NoError(t, err)
		}, KindSynthetic, SyntheticDir, LayoutBinary,
			func(root string) string {
				return "SYNTHETIC DATA: no real cifar10 in " + root + ", so generated images stand in (in " + filepath.Join(root, "synthetic", spec.Dir) +
					") and accuracies are not real CIFAR accuracy; for real data set CIFARLAB_DATA to the folder holding cifar-10-batches-bin/ " +
					"or cifar-10-batches-py/, or run: cifarlab download --dataset cifar10 --data " + root
			}},
		{"synthetic data written into the folder", func(t *testing.T, root string) {
			require.NoError(t, Synthesize(root, spec, SynthOptions{TrainSize: 10, TestSize: 5}))
		}, KindSynthetic, func(root string) string { return root }, LayoutBinary, nil},
		{"real data next to an older synthetic stand-in", func(t *testing.T, root string) {
			_, err := Prepare(root, spec, SynthOptions{TrainSize: 10, TestSize: 5})
			require.NoError(t, err)
			realBinaryFolder(t, root, spec)
		}, KindUnverified, func(root string) string { return root }, LayoutBinary, nil},
	}
}

// TestStateOf: the one decision of what a data folder holds. Real data in either layout is
// used (root), verified or not; synthetic data only when no real data is there.
func TestStateOf(t *testing.T) {
	spec, archive := testArchive(t, CIFAR10())
	for _, c := range stateCases(spec, archive) {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			c.setup(t, root)
			st := StateOf(root, spec)
			require.Equal(t, c.kind, st.Kind)
			require.Equal(t, c.loadRoot(root), st.LoadRoot)
			require.Equal(t, c.layout, st.Layout)
			require.Equal(t, st.Kind == KindUnverified, st.NotVerified != nil)
			if c.line != nil {
				require.Equal(t, c.line(root), st.String())
			}
			if c.kind == KindNone {
				return
			}
			// Prepare, the notebooks' way in, follows the same decision and loads from LoadRoot.
			dataRoot, synthetic, err := PrepareRoot(root, spec, SynthOptions{TrainSize: 10, TestSize: 5})
			require.NoError(t, err)
			require.Equal(t, st.LoadRoot, dataRoot)
			require.Equal(t, c.kind == KindSynthetic, synthetic)
			train, err := LoadSplit(dataRoot, spec, SplitTrain)
			require.NoError(t, err)
			if st.Real() && st.Images == "" { // a subset holds fewer
				require.Equal(t, testRecords(spec, spec.TrainSize).RawLabels, train.RawLabels, "the real records, not synthetic ones")
			}
		})
	}
}

// extractArchiveForTest installs archive (of spec) into root as Download does after fetching it.
func extractArchiveForTest(root string, spec Spec, archive []byte) error {
	path := filepath.Join(root, spec.ArchiveName)
	if err := os.WriteFile(path, archive, 0o644); err != nil {
		return err
	}
	defer os.Remove(path)
	return install(path, root, spec, "", io.Discard)
}

// TestVerifyFolder: a copied folder with no download record is verified offline against the
// official archive (its SHA-256, then each file's content), which writes the record; files
// that differ are never called verified, and without the archive the binary layout's files
// can only be told apart by their sizes, which the error says.
func TestVerifyFolder(t *testing.T) {
	spec, archive := testArchive(t, CIFAR10())
	archivePath := filepath.Join(t.TempDir(), spec.ArchiveName)
	require.NoError(t, os.WriteFile(archivePath, archive, 0o644))

	root := t.TempDir()
	realBinaryFolder(t, root, spec)
	_, err := VerifyFolder(root, spec, "")
	require.ErrorIs(t, err, ErrNotVerified)
	require.NotErrorIs(t, err, ErrNotOfficial, "same sizes: nothing proves them different")
	require.ErrorContains(t, err, "cifarlib pins no checksum of the binary layout's files, only of the archive cifar-10-binary.tar.gz")
	require.ErrorContains(t, err, "--archive PATH/cifar-10-binary.tar.gz")
	require.Equal(t, KindUnverified, StateOf(root, spec).Kind)

	// A wrong archive is refused before anything is compared.
	bad := filepath.Join(t.TempDir(), spec.ArchiveName)
	require.NoError(t, os.WriteFile(bad, append(bytes.Clone(archive), 0), 0o644))
	_, err = VerifyFolder(root, spec, bad)
	require.ErrorIs(t, err, ErrChecksum)
	require.Equal(t, KindUnverified, StateOf(root, spec).Kind)

	// One changed byte: not the official files, and no record is written.
	testFile := filepath.Join(root, spec.Dir, spec.TestFiles[0])
	body, err := os.ReadFile(testFile)
	require.NoError(t, err)
	changed := bytes.Clone(body)
	changed[len(changed)-1] ^= 1
	require.NoError(t, os.WriteFile(testFile, changed, 0o644))
	_, err = VerifyFolder(root, spec, archivePath)
	require.ErrorIs(t, err, ErrNotOfficial)
	require.ErrorContains(t, err, testFile+" differs from the official archive's copy")
	require.NoFileExists(t, filepath.Join(root, spec.Dir, VerifiedMarker))

	// The official files: verified, recorded, and said so from then on.
	require.NoError(t, os.WriteFile(testFile, body, 0o644))
	what, err := VerifyFolder(root, spec, archivePath)
	require.NoError(t, err)
	require.Equal(t, archivePath+" has the official SHA-256 and each of the 6 files in "+filepath.Join(root, spec.Dir)+
		" is identical to its copy in it; recorded in "+filepath.Join(root, spec.Dir, VerifiedMarker), what)
	require.Equal(t, KindVerified, StateOf(root, spec).Kind)
	require.NoError(t, Verify(root, spec))

	// A subset (fewer images per file, as a conversion of part of the data has): not official.
	sub := t.TempDir()
	realBinaryFolder(t, sub, spec)
	require.NoError(t, os.Truncate(filepath.Join(sub, spec.Dir, spec.TrainFiles[0]), int64(spec.RecordBytes())))
	_, err = VerifyFolder(sub, spec, "")
	require.ErrorIs(t, err, ErrNotOfficial)
	require.ErrorContains(t, err, "data_batch_1.bin has 3073 bytes (1 images), the official file 6146 bytes (2 images) (a subset or a conversion")

	// Synthetic data and an empty folder: nothing to verify.
	_, err = VerifyFolder(t.TempDir(), spec, "")
	require.ErrorIs(t, err, ErrNotVerified)
	synth := t.TempDir()
	require.NoError(t, Synthesize(synth, spec, SynthOptions{TrainSize: 10, TestSize: 5}))
	_, err = VerifyFolder(synth, spec, "")
	require.ErrorContains(t, err, "it holds synthetic data, nothing to verify")
}

// TestVerifyFolderPythonArchive: a copied python-layout folder (no marker, MD5s not torchvision's
// pins) is verified against its archive too, and then says so through the marker.
func TestVerifyFolderPythonArchive(t *testing.T) {
	spec := smallSpec(CIFAR10())
	root := t.TempDir()
	writePythonFolder(t, root, spec)
	py := spec.InLayout(LayoutPython)
	py.TrainSize, py.TestSize = spec.TrainSize, spec.TestSize
	entries := []tarEntry{{name: py.Dir + "/", typ: tar.TypeDir}}
	for name, body := range pythonFolderFiles(spec) {
		entries = append(entries, tarEntry{name: py.Dir + "/" + name, typ: tar.TypeReg, body: body, size: -1})
	}
	archive := gzipBytes(t, buildTar(t, entries))
	py.ArchiveSHA256 = sha256Hex(archive)
	archivePath := filepath.Join(t.TempDir(), py.ArchiveName)
	require.NoError(t, os.WriteFile(archivePath, archive, 0o644))

	require.Equal(t, KindUnverified, StateOf(root, py).Kind)
	_, err := VerifyFolder(root, py, "")
	require.ErrorIs(t, err, ErrNotOfficial, "without the archive: torchvision's MD5s say these are not the official files")
	require.ErrorContains(t, err, "(torchvision's pin)")
	what, err := VerifyFolder(root, py, archivePath)
	require.NoError(t, err)
	require.Contains(t, what, "each of the 7 files in "+filepath.Join(root, py.Dir)+" is identical to its copy in it")
	require.Equal(t, KindVerified, StateOf(root, py).Kind)
}

// TestStateLoadSplit: a State loads each split from what StateOf found, the records and errors
// LoadSplit gives for that folder, and describes them as ProvenanceOf does: real binary files,
// a torchvision folder, synthetic data written into the folder, Prepare's stand-in next to
// it, and an empty folder (LoadSplit's error for the folder asked about).
func TestStateLoadSplit(t *testing.T) {
	spec := CIFAR10()
	opts := SynthOptions{Seed: 3, TrainSize: 20, TestSize: 10}
	cases := []struct {
		name  string
		setup func(root string)
		kind  string
	}{
		{"binary", func(root string) {
			require.NoError(t, Synthesize(root, spec, opts))
			require.NoError(t, os.Remove(filepath.Join(root, spec.Dir, SyntheticMarker)))
		}, KindUnverified},
		{"python", func(root string) { writePythonFolder(t, root, spec) }, KindUnverified},
		{"synthetic in root", func(root string) { require.NoError(t, Synthesize(root, spec, opts)) }, KindSynthetic},
		{"stand-in", func(root string) { require.NoError(t, Synthesize(SyntheticDir(root), spec, opts)) }, KindSynthetic},
		{"none", func(string) {}, KindNone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			c.setup(root)
			st := StateOf(root, spec)
			require.Equal(t, c.kind, st.Kind)
			var loaded [2]*Records
			for _, split := range []Split{SplitTrain, SplitTest} {
				got, err := st.LoadSplit(split)
				want, wantErr := LoadSplit(st.LoadRoot, spec, split)
				if st.Kind == KindNone {
					want, wantErr = LoadSplit(root, spec, split)
				} else {
					require.Empty(t, want.Kind, "LoadSplit alone does not know what the records are")
					require.Equal(t, c.kind, got.Kind, "the records say what the state found")
					want.Kind = got.Kind
				}
				require.Equal(t, wantErr, err)
				require.Equal(t, want, got)
				loaded[split] = got
			}
			if st.Kind == KindNone {
				require.Nil(t, loaded[SplitTrain])
				_, err := st.LoadSplit(SplitTrain)
				require.ErrorIs(t, err, os.ErrNotExist)
				require.ErrorContains(t, err, "cifarlab download --dataset cifar10 --data "+root)
				return
			}
			require.Equal(t, ProvenanceOf(loaded[SplitTrain], loaded[SplitTest]), st.Provenance(loaded[SplitTrain], loaded[SplitTest]))
			require.Equal(t, c.kind, st.Provenance(loaded[SplitTrain], loaded[SplitTest]).Kind)
		})
	}
}
