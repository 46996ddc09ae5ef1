package data

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProvenanceOf: records read from the synthetic data Synthesize wrote are synthetic, the same
// files without their marker real but unverified (as a converted copy would be), records
// SynthesizeRecords made synthetic without a folder, and hand-built records in memory.
func TestProvenanceOf(t *testing.T) {
	spec := CIFAR10()
	opts := SynthOptions{Seed: 1, TrainSize: 50, TestSize: 10}
	root := t.TempDir()
	require.NoError(t, Synthesize(root, spec, opts))
	folder := filepath.Join(root, spec.Dir)
	load := func(split Split) *Records {
		recs, err := LoadSplit(root, spec, split)
		require.NoError(t, err)
		return recs
	}
	fromFiles := ProvenanceOf(load(SplitTrain), load(SplitTest))
	inMemory, err := SynthesizeRecords(spec, SplitTrain, opts)
	require.NoError(t, err)
	built := NewRecords(spec, "my loader", 3)

	require.Equal(t, Provenance{Dataset: "cifar10", Kind: KindSynthetic, Layout: "binary", Folder: folder, TrainImages: 50, TestImages: 10}, fromFiles)
	require.Equal(t, "synthetic cifar10, binary layout, 50 train / 10 test images, in "+folder, fromFiles.String())
	require.False(t, fromFiles.Real())
	require.Equal(t, Provenance{Dataset: "cifar10", Kind: KindSynthetic, TrainImages: 50}, ProvenanceOf(inMemory, nil))
	require.Equal(t, Provenance{Dataset: "cifar10", Kind: KindInMemory, TrainImages: 3}, ProvenanceOf(built, nil))
	require.Equal(t, "in memory cifar10, 3 train images", ProvenanceOf(built, nil).String())

	// A notebook's Lab shows its sources from $CIFARLAB_DATA: the folder stays so, and is read.
	t.Setenv(DirEnv, root)
	shown := load(SplitTrain)
	shown.Source = "$" + DirEnv + "/" + spec.Dir + "/" + filepath.Base(shown.Source)
	require.Equal(t, Provenance{Dataset: "cifar10", Kind: KindSynthetic, Layout: "binary", Folder: "$" + DirEnv + "/" + spec.Dir,
		TrainImages: 50}, ProvenanceOf(shown, nil))

	require.NoError(t, os.Remove(filepath.Join(folder, SyntheticMarker)))
	unverified := ProvenanceOf(load(SplitTrain), nil)
	require.Equal(t, Provenance{Dataset: "cifar10", Kind: KindUnverified, Layout: "binary", Folder: folder, TrainImages: 50,
		Subset: "50 of 50,000 training images"}, unverified)
	require.True(t, unverified.Real())
	require.Equal(t, "cifar10 (real, unverified), binary layout, 50 train images, subset: 50 of 50,000 training images, in "+folder,
		unverified.String())
	both := ProvenanceOf(load(SplitTrain), load(SplitTest))
	require.Equal(t, "50 of 50,000 training images and 10 of 10,000 test images", both.Subset)
}

// TestSubsetOf: real data with fewer images than the official splits says how many of them, a
// whole split says nothing.
func TestSubsetOf(t *testing.T) {
	for _, c := range []struct {
		spec        Spec
		train, test int
		want        string
	}{
		{CIFAR10(), 50000, 10000, ""},
		{CIFAR10(), 50000, 0, ""},
		{CIFAR10(), 20000, 10000, "20,000 of 50,000 training images"},
		{CIFAR10(), 20000, 0, "20,000 of 50,000 training images"},
		{CIFAR10(), 49999, 10000, "49,999 of 50,000 training images"},
		{CIFAR10(), 50000, 5000, "5,000 of 10,000 test images"},
		{CIFAR10(), 999, 1000, "999 of 50,000 training images and 1,000 of 10,000 test images"},
		{CIFAR100(LabelsCoarse), 1234567, 10000, ""},
		{CIFAR100(LabelsFine), 0, 0, "0 of 50,000 training images"},
	} {
		require.Equal(t, c.want, subsetOf(c.spec, c.train, c.test), "%s %d/%d", c.spec.ID(), c.train, c.test)
	}
	require.Equal(t, "1,234,567", thousands(1234567))
	require.Equal(t, "-1,000", thousands(-1000))
	require.Equal(t, "100", thousands(100))
}

// TestCaption: the few words a figure or an accuracy carries about its data.
func TestCaption(t *testing.T) {
	for _, c := range []struct{ dataset, kind, want string }{
		{"cifar100", KindSynthetic, "SYNTHETIC cifar100 (generated images, not real accuracy)"},
		{"cifar10", KindVerified, "real cifar10, verified"},
		{"cifar10", KindUnverified, "real cifar10, unverified"},
		{"cifar100-coarse", KindInMemory, "cifar100-coarse, not known whether real or synthetic"},
		{"cifar10", "", "cifar10, not known whether real or synthetic"},
		{"", KindSynthetic, "SYNTHETIC data (generated images, not real accuracy)"},
		{"", "", "not known whether real or synthetic"},
	} {
		require.Equal(t, c.want, Caption(c.dataset, c.kind), "%q %q", c.dataset, c.kind)
		require.Equal(t, c.want, Provenance{Dataset: c.dataset, Kind: c.kind}.Caption())
		require.Equal(t, c.want, SplitLabels{Dataset: c.dataset, Kind: c.kind}.Caption())
	}
	recs, err := SynthesizeRecords(CIFAR10(), SplitTest, SynthOptions{Seed: 1, TrainSize: 10, TestSize: 10})
	require.NoError(t, err)
	require.Equal(t, KindSynthetic, recs.Kind)
	require.Equal(t, "cifar10", recs.LabelStats(10).Dataset)
	require.Equal(t, KindSynthetic, recs.LabelStats(10).Kind, "a chart of the labels says synthetic")
}
