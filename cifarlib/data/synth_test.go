package data

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSynthesizeWritesRealFormat(t *testing.T) {
	root := t.TempDir()
	spec := CIFAR10()
	opts := SynthOptions{Seed: 1, TrainSize: 53, TestSize: 11}
	require.NoError(t, Synthesize(root, spec, opts))

	dir := filepath.Join(root, spec.Dir)
	for k, want := range []int{10, 11, 10, 11, 11} {
		fi, err := os.Stat(filepath.Join(dir, spec.TrainFiles[k]))
		require.NoError(t, err)
		require.Equal(t, int64(want*3073), fi.Size(), spec.TrainFiles[k])
	}
	fi, err := os.Stat(filepath.Join(dir, "test_batch.bin"))
	require.NoError(t, err)
	require.Equal(t, int64(11*3073), fi.Size())

	info, err := ReadSynthInfo(root, spec)
	require.NoError(t, err)
	require.Equal(t, SynthInfo{Generator: "cifarlab-synth-v1", Dataset: "cifar10", Seed: 1, TrainSize: 53, TestSize: 11}, info)
	raw, err := os.ReadFile(filepath.Join(dir, SyntheticMarker))
	require.NoError(t, err)
	var asMap map[string]any
	require.NoError(t, json.Unmarshal(raw, &asMap))
	require.Equal(t, map[string]any{"generator": "cifarlab-synth-v1", "dataset": "cifar10", "seed": 1.0,
		"train_size": 53.0, "test_size": 11.0, "label_noise": 0.0}, asMap)

	train, err := LoadSplit(root, spec, SplitTrain)
	require.NoError(t, err)
	require.Equal(t, 53, train.Len())
	require.Equal(t, []int{6, 6, 6, 5, 5, 5, 5, 5, 5, 5}, train.LabelHistogram(), "classes must be balanced")
	test, err := LoadSplit(root, spec, SplitTest)
	require.NoError(t, err)
	require.Equal(t, []int{2, 1, 1, 1, 1, 1, 1, 1, 1, 1}, test.LabelHistogram())

	// In memory and on disk agree.
	mem, err := SynthesizeRecords(spec, SplitTrain, opts)
	require.NoError(t, err)
	require.Equal(t, mem.Pixels, train.Pixels)
	require.Equal(t, mem.RawLabels, train.RawLabels)

	// Not verified: synthetic data must never pass for the real archive.
	require.ErrorIs(t, Verify(root, spec), ErrNotVerified)
	require.ErrorContains(t, Verify(root, spec), "holds synthetic data")
}

func TestSynthesizeCIFAR100Labels(t *testing.T) {
	spec := CIFAR100(LabelsCoarse)
	recs, err := SynthesizeRecords(spec, SplitTrain, SynthOptions{Seed: 3, TrainSize: 400, TestSize: 1, LabelNoise: 0.1})
	require.NoError(t, err)
	hist := make([]int, 100)
	for i := range recs.Len() {
		require.Equal(t, CIFAR100CoarseOf(recs.FineLabel(i)), recs.CoarseLabel(i), "record %d", i)
		require.Equal(t, recs.CoarseLabel(i), recs.Label(i), "a coarse spec reads the coarse byte")
		hist[recs.FineLabel(i)]++
	}
	// 400 records: 4 per fine class before noise; 40 relabelled records move a few.
	total := 0
	for _, n := range hist {
		total += n
	}
	require.Equal(t, 400, total)
}

func TestSynthesizeDeterministic(t *testing.T) {
	spec := CIFAR100(LabelsFine)
	opts := SynthOptions{Seed: 42, TrainSize: 300, TestSize: 50, LabelNoise: 0.2}
	a, err := SynthesizeRecords(spec, SplitTrain, opts)
	require.NoError(t, err)
	prev := runtime.GOMAXPROCS(1)
	b, err := SynthesizeRecords(spec, SplitTrain, opts)
	runtime.GOMAXPROCS(prev)
	require.NoError(t, err)
	require.True(t, bytes.Equal(a.Pixels, b.Pixels), "pixels depend on the number of workers")
	require.Equal(t, a.RawLabels, b.RawLabels)

	opts.Seed = 43
	c, err := SynthesizeRecords(spec, SplitTrain, opts)
	require.NoError(t, err)
	require.False(t, bytes.Equal(a.Pixels, c.Pixels))
	require.NotEqual(t, a.RawLabels, c.RawLabels)

	test, err := SynthesizeRecords(spec, SplitTest, opts)
	require.NoError(t, err)
	require.Equal(t, 50, test.Len())
	require.False(t, bytes.Equal(a.Pixels[:50*ImageBytes], test.Pixels), "train and test must differ")

	// Synthesize writes the same bytes twice.
	r1, r2 := t.TempDir(), t.TempDir()
	small := SynthOptions{Seed: 5, TrainSize: 20, TestSize: 5}
	require.NoError(t, Synthesize(r1, spec, small))
	require.NoError(t, Synthesize(r2, spec, small))
	for _, f := range []string{"train.bin", "test.bin", SyntheticMarker} {
		x, err := os.ReadFile(filepath.Join(r1, spec.Dir, f))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(r2, spec.Dir, f))
		require.NoError(t, err)
		require.True(t, bytes.Equal(x, y), f)
	}
}

// colourFeatures returns the per-channel mean of each image (0..255).
func colourFeatures(recs *Records) [][3]float64 {
	const plane = ImageHeight * ImageWidth
	out := make([][3]float64, recs.Len())
	for i := range out {
		img := recs.Image(i)
		for c := range 3 {
			s := 0
			for _, v := range img[c*plane : (c+1)*plane] {
				s += int(v)
			}
			out[i][c] = float64(s) / plane
		}
	}
	return out
}

// nearestCentroidAccuracy fits class centroids of the features on train and returns the
// accuracy of nearest-centroid classification on test.
func nearestCentroidAccuracy(train, test *Records) float64 {
	k := train.Spec.NumClasses
	sum := make([][3]float64, k)
	count := make([]float64, k)
	for i, f := range colourFeatures(train) {
		l := train.Label(i)
		for c := range 3 {
			sum[l][c] += f[c]
		}
		count[l]++
	}
	correct := 0
	for i, f := range colourFeatures(test) {
		best, bestD := -1, math.Inf(1)
		for l := range k {
			if count[l] == 0 {
				continue
			}
			d := 0.0
			for c := range 3 {
				x := f[c] - sum[l][c]/count[l]
				d += x * x
			}
			if d < bestD {
				best, bestD = l, d
			}
		}
		if best == test.Label(i) {
			correct++
		}
	}
	return float64(correct) / float64(test.Len())
}

// TestSynthesizeLearnable checks that the classes are separable by a simple classifier
// (the training helpers check a CNN learns them): chance is 10%, 1% and 5%.
func TestSynthesizeLearnable(t *testing.T) {
	for _, tc := range []struct {
		spec   Spec
		train  int
		minAcc float64
	}{
		{CIFAR10(), 1000, 0.97},
		{CIFAR100(LabelsFine), 3000, 0.90},
		{CIFAR100(LabelsCoarse), 3000, 0.97},
	} {
		opts := SynthOptions{Seed: 7, TrainSize: tc.train, TestSize: 500}
		train, err := SynthesizeRecords(tc.spec, SplitTrain, opts)
		require.NoError(t, err)
		test, err := SynthesizeRecords(tc.spec, SplitTest, opts)
		require.NoError(t, err)
		acc := nearestCentroidAccuracy(train, test)
		t.Logf("%s: nearest colour centroid accuracy %.3f", tc.spec.ID(), acc)
		require.GreaterOrEqual(t, acc, tc.minAcc, tc.spec.ID())

		// Images are textured, not flat colours: every image has stripes and noise.
		mean, std := train.ChannelStats()
		t.Logf("%s: channel mean %.3f std %.3f", tc.spec.ID(), mean, std)
		for i := range 20 {
			img := (&Records{Spec: tc.spec, Pixels: train.Image(i), RawLabels: train.RawLabels[:tc.spec.LabelBytes]})
			_, s := img.ChannelStats()
			require.Greater(t, s[0]+s[1]+s[2], 0.08, "image %d is nearly flat", i)
		}
	}
}

func TestSynthesizeLabelNoise(t *testing.T) {
	spec := CIFAR10()
	opts := SynthOptions{Seed: 9, TrainSize: 1000, TestSize: 500, LabelNoise: 0.25}
	train, truth, err := synthesizeRecords(spec, SplitTrain, opts)
	require.NoError(t, err)
	wrong := 0
	for i, l := range truth {
		if train.Label(i) != l {
			wrong++
		}
	}
	require.Equal(t, 250, wrong, "exactly round(0.25*1000) labels are replaced, each by a different class")
	test, testTruth, err := synthesizeRecords(spec, SplitTest, opts)
	require.NoError(t, err)
	for i, l := range testTruth {
		require.Equal(t, l, test.Label(i), "the test split stays clean")
	}
	// Same images as without noise: only labels change.
	clean, err := SynthesizeRecords(spec, SplitTrain, SynthOptions{Seed: 9, TrainSize: 1000, TestSize: 500})
	require.NoError(t, err)
	require.True(t, bytes.Equal(clean.Pixels, train.Pixels))
}

func TestSynthesizeRejectsBadOptions(t *testing.T) {
	root := t.TempDir()
	require.ErrorContains(t, Synthesize(root, CIFAR10(), SynthOptions{TrainSize: 3, TestSize: 5}),
		"train size 3 must be in [5, 1000000]")
	require.ErrorContains(t, Synthesize(root, CIFAR10(), SynthOptions{TestSize: -1}), "test size -1")
	require.ErrorContains(t, Synthesize(root, CIFAR10(), SynthOptions{LabelNoise: 1}), "label noise 1 must be in [0, 1)")
	require.ErrorContains(t, Synthesize(root, CIFAR10(), SynthOptions{LabelNoise: math.NaN()}), "label noise NaN")
	require.ErrorContains(t, Synthesize(root, Spec{}, SynthOptions{}), "invalid Spec")

	// Never over verified real data.
	spec := CIFAR10()
	require.NoError(t, os.MkdirAll(filepath.Join(root, spec.Dir), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, spec.Dir, VerifiedMarker), []byte("{}"), 0o644))
	require.ErrorContains(t, Synthesize(root, spec, SynthOptions{TrainSize: 5, TestSize: 1}), "refusing to overwrite")
}

func TestPrepareSynthesizesOnce(t *testing.T) {
	root := t.TempDir()
	spec := CIFAR100(LabelsFine)
	opts := SynthOptions{Seed: 1, TrainSize: 30, TestSize: 10}
	dataRoot, synthetic, err := PrepareRoot(root, spec, opts)
	require.NoError(t, err)
	require.True(t, synthetic)
	require.Equal(t, filepath.Join(root, "synthetic"), dataRoot)
	trainFile := filepath.Join(dataRoot, spec.Dir, "train.bin")
	before, err := os.Stat(trainFile)
	require.NoError(t, err)

	// Same options: reused, not rewritten (the file is the same inode).
	synthetic, err = Prepare(root, spec, opts)
	require.NoError(t, err)
	require.True(t, synthetic)
	after, err := os.Stat(trainFile)
	require.NoError(t, err)
	require.True(t, os.SameFile(before, after), "Prepare rewrote data it could reuse")

	// Coarse labels share the files.
	_, err = Prepare(root, CIFAR100(LabelsCoarse), opts)
	require.NoError(t, err)
	after, _ = os.Stat(trainFile)
	require.True(t, os.SameFile(before, after))

	// Other options: regenerated.
	opts.Seed = 2
	train, test, synthetic, err := LoadPrepared(root, spec, opts)
	require.NoError(t, err)
	require.True(t, synthetic)
	require.Equal(t, 30, train.Len())
	require.Equal(t, 10, test.Len())
	after, _ = os.Stat(trainFile)
	require.False(t, os.SameFile(before, after))
	info, err := ReadSynthInfo(dataRoot, spec)
	require.NoError(t, err)
	require.Equal(t, int64(2), info.Seed)

	// A damaged file is noticed and regenerated.
	require.NoError(t, os.Truncate(trainFile, 100))
	train, _, _, err = LoadPrepared(root, spec, opts)
	require.NoError(t, err)
	require.Equal(t, 30, train.Len())
}

func TestDefaultDataDir(t *testing.T) {
	t.Setenv(DirEnv, "/some/where")
	require.Equal(t, "/some/where", DefaultDir())
	t.Setenv(DirEnv, "")
	t.Setenv("XDG_CACHE_HOME", "/cache/home")
	require.Equal(t, "/cache/home/cifarlab", DefaultDir())
}
