package data

import (
	"errors"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"
)

// wantPixel is the normalised value of pixel (y, x, c) of planar image img, computed
// independently of the lookup tables.
func wantPixel(spec Spec, img []byte, y, x, c int) float64 {
	v := float64(img[c*ImageHeight*ImageWidth+y*ImageWidth+x])
	return (v/255 - float64(spec.Mean[c])) / float64(spec.Std[c])
}

// requireDecoded checks that hwc is image img decoded with spec's normalisation.
func requireDecoded(t *testing.T, spec Spec, img []byte, hwc []float32) {
	t.Helper()
	require.Len(t, hwc, ImageBytes)
	for y := range ImageHeight {
		for x := range ImageWidth {
			for c := range ImageChannels {
				want, got := wantPixel(spec, img, y, x, c), float64(hwc[(y*ImageWidth+x)*3+c])
				if math.Abs(want-got) > 1e-6 {
					require.InDelta(t, want, got, 1e-6, "y=%d x=%d c=%d", y, x, c)
				}
			}
		}
	}
}

func collect(t *testing.T, ds *Dataset) []*HostBatch {
	t.Helper()
	var out []*HostBatch
	for hb, err := range ds.HostBatches() {
		require.NoError(t, err)
		out = append(out, hb)
	}
	return out
}

func TestDatasetBatchesInOrder(t *testing.T) {
	spec := CIFAR100(LabelsFine)
	recs := testRecords(spec, 10)
	ds, err := NewDataset("eval", recs, DatasetOptions{BatchSize: 4, Epochs: 1})
	require.NoError(t, err)
	require.Equal(t, "eval", ds.Name())
	require.Equal(t, 10, ds.NumExamples())
	require.Equal(t, 3, ds.BatchesPerEpoch())
	batches := collect(t, ds)
	require.Len(t, batches, 3)
	require.Equal(t, []int{0, 1, 2, 3}, batches[0].Examples)
	require.Equal(t, []int{8, 9}, batches[2].Examples)
	require.Equal(t, 2, batches[2].Size())
	for k, hb := range batches {
		require.Equal(t, k, hb.Number)
		require.Equal(t, 0, hb.Epoch)
		for j, ex := range hb.Examples {
			require.Equal(t, int32((7*ex+3)%100), hb.Labels[j], "fine label of example %d", ex)
			requireDecoded(t, spec, recs.Image(ex), hb.Images[j*ImageBytes:(j+1)*ImageBytes])
		}
	}

	// Coarse view: same images, coarse labels.
	coarse, err := recs.WithSpec(CIFAR100(LabelsCoarse))
	require.NoError(t, err)
	ds, err = NewDataset("coarse", coarse, DatasetOptions{BatchSize: 4, Epochs: 1, DropRemainder: true})
	require.NoError(t, err)
	require.Equal(t, 2, ds.BatchesPerEpoch())
	batches = collect(t, ds)
	require.Len(t, batches, 2, "DropRemainder drops the last batch of 2")
	require.Equal(t, []int32{4, 5, 6, 7}, batches[1].Labels)
}

func TestDatasetShuffleAndEpochs(t *testing.T) {
	recs := testRecords(CIFAR10(), 10)
	order := func(seed int64, epochs int) [][]int {
		ds, err := NewDataset("train", recs, DatasetOptions{BatchSize: 3, Shuffle: true, Seed: seed, Epochs: epochs})
		require.NoError(t, err)
		var perEpoch [][]int
		number := 0
		for _, hb := range collect(t, ds) {
			require.Equal(t, number, hb.Number)
			number++
			for len(perEpoch) <= hb.Epoch {
				perEpoch = append(perEpoch, nil)
			}
			perEpoch[hb.Epoch] = append(perEpoch[hb.Epoch], hb.Examples...)
			for j, ex := range hb.Examples {
				require.Equal(t, int32(ex%10), hb.Labels[j])
			}
		}
		require.Equal(t, 4*epochs, number, "4 batches (3+3+3+1) per epoch")
		return perEpoch
	}
	a := order(1, 3)
	require.Len(t, a, 3)
	for _, epoch := range a {
		sorted := slices.Sorted(slices.Values(epoch))
		require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, sorted, "each epoch visits every example once")
	}
	require.NotEqual(t, a[0], a[1], "epochs are reshuffled")
	require.NotEqual(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, a[0])
	require.Equal(t, a, order(1, 3), "same seed, same order")
	require.NotEqual(t, a[0], order(2, 1)[0], "another seed, another order")

	// Successive Iter calls (train.Loop.RunEpochs calls Iter once per epoch) continue the
	// epoch count: a one-epoch dataset is reshuffled on every call, until Reset.
	ds, err := NewDataset("train", recs, DatasetOptions{BatchSize: 10, Shuffle: true, Seed: 1, Epochs: 1})
	require.NoError(t, err)
	var calls [][]int
	var epochs []int
	for range 3 {
		for _, hb := range collect(t, ds) {
			calls = append(calls, hb.Examples)
			epochs = append(epochs, hb.Epoch)
		}
	}
	require.Equal(t, []int{0, 1, 2}, epochs)
	require.Equal(t, a, calls, "three calls of one epoch = one call of three epochs")
	ds.Reset()
	require.Equal(t, a[0], collect(t, ds)[0].Examples)
}

func TestDatasetInfinite(t *testing.T) {
	recs := testRecords(CIFAR10(), 10)
	ds, err := NewDataset("train", recs, DatasetOptions{BatchSize: 4, Shuffle: true, DropRemainder: true})
	require.NoError(t, err)
	count, lastEpoch := 0, 0
	for hb, err := range ds.HostBatches() {
		require.NoError(t, err)
		require.Equal(t, 4, hb.Size())
		count++
		lastEpoch = hb.Epoch
		if count == 25 {
			break
		}
	}
	require.Equal(t, 25, count)
	require.Equal(t, 12, lastEpoch, "2 full batches per epoch: batch 25 is in epoch 12")
}

func TestDatasetIterTensors(t *testing.T) {
	spec := CIFAR10()
	recs := testRecords(spec, 6)
	opts := DatasetOptions{BatchSize: 4, Shuffle: true, Seed: 3, Epochs: 1, Augment: true}
	ds, err := NewDataset("train", recs, opts)
	require.NoError(t, err)
	host := collect(t, ds)
	ds.Reset() // the same shuffle and augmentation again
	k := 0
	for batch, err := range ds.Iter() {
		require.NoError(t, err)
		require.Len(t, batch.Inputs, 1)
		require.Len(t, batch.Labels, 1)
		b := host[k].Size()
		images, labels := batch.Inputs[0], batch.Labels[0]
		require.Equal(t, dtypes.Float32, images.DType())
		require.Equal(t, []int{b, 32, 32, 3}, images.Shape().Dimensions)
		require.Equal(t, dtypes.Int32, labels.DType())
		require.Equal(t, []int{b, 1}, labels.Shape().Dimensions)
		require.Equal(t, host[k].Images, tensors.MustCopyFlatData[float32](images))
		require.Equal(t, host[k].Labels, tensors.MustCopyFlatData[int32](labels))
		require.NoError(t, batch.Finalize())
		k++
	}
	require.Equal(t, 2, k)
}

// findAugmentation searches the crop offsets and flip that turn img into hwc.
func findAugmentation(spec Spec, img []byte, hwc []float32) (ox, oy int, flip, ok bool) {
	norm, _ := newNormalizer(spec.Mean, spec.Std)
	got := make([]float32, ImageBytes)
	for _, flip := range []bool{false, true} {
		for oy := range 2*augmentPadding + 1 {
			for ox := range 2*augmentPadding + 1 {
				augmentImage(norm, img, got, ox, oy, flip)
				if slices.Equal(got, hwc) {
					return ox, oy, flip, true
				}
			}
		}
	}
	return 0, 0, false, false
}

func TestDatasetAugment(t *testing.T) {
	spec := CIFAR10()
	recs := testRecords(spec, 64)
	// augmentImage against the definition, for one crop: shift right/down by 4, flipped.
	norm, err := newNormalizer(spec.Mean, spec.Std)
	require.NoError(t, err)
	got := make([]float32, ImageBytes)
	img := recs.Image(5)
	augmentImage(norm, img, got, 0, 0, true)
	for y := range 32 {
		for x := range 32 {
			for c := range 3 {
				sy, sx := y-4, (31-x)-4
				want := (0 - float64(spec.Mean[c])) / float64(spec.Std[c])
				if sy >= 0 && sx >= 0 {
					want = wantPixel(spec, img, sy, sx, c)
				}
				require.InDelta(t, want, float64(got[(y*32+x)*3+c]), 1e-6)
			}
		}
	}
	augmentImage(norm, img, got, augmentPadding, augmentPadding, false)
	requireDecoded(t, spec, img, got)

	ds, err := NewDataset("aug", recs, DatasetOptions{BatchSize: 64, Epochs: 2, Augment: true, Seed: 11})
	require.NoError(t, err)
	flips, shifted := 0, 0
	for _, hb := range collect(t, ds) {
		for j, ex := range hb.Examples {
			ox, oy, flip, ok := findAugmentation(spec, recs.Image(ex), hb.Images[j*ImageBytes:(j+1)*ImageBytes])
			require.True(t, ok, "example %d is not a padded crop/flip of its image", ex)
			if flip {
				flips++
			}
			if ox != augmentPadding || oy != augmentPadding {
				shifted++
			}
		}
	}
	t.Logf("of 128 augmented images: %d flipped, %d shifted", flips, shifted)
	require.Greater(t, flips, 40)
	require.Less(t, flips, 88)
	require.Greater(t, shifted, 100)
}

func TestDatasetCheckHook(t *testing.T) {
	recs := testRecords(CIFAR10(), 10)
	errBadLabel := errors.New("label 9 not allowed")
	var seen []int
	opts := DatasetOptions{BatchSize: 4, Epochs: 1, Check: func(hb *HostBatch) error {
		seen = append(seen, hb.Number)
		if slices.Contains(hb.Labels, 9) {
			return errBadLabel
		}
		return nil
	}}
	ds, err := NewDataset("guarded", recs, opts)
	require.NoError(t, err)
	var good int
	var gotErr error
	for hb, err := range ds.HostBatches() {
		if err != nil {
			require.Nil(t, hb)
			gotErr = err
			continue
		}
		good++
	}
	require.Equal(t, 2, good, "batches 0 and 1 pass; batch 2 holds example 9")
	require.ErrorIs(t, gotErr, errBadLabel)
	require.EqualError(t, gotErr, `data: dataset "guarded" batch 2 (epoch 0): label 9 not allowed`)
	require.Equal(t, []int{0, 1, 2}, seen)

	// Iter yields the error before making tensors, then stops.
	good, gotErr = 0, nil
	for batch, err := range ds.Iter() {
		if err != nil {
			require.Nil(t, batch.Inputs)
			gotErr = err
			continue
		}
		good++
		require.NoError(t, batch.Finalize())
	}
	require.Equal(t, 2, good)
	require.ErrorIs(t, gotErr, errBadLabel)
}

func TestNewDatasetErrors(t *testing.T) {
	recs := testRecords(CIFAR10(), 5)
	_, err := NewDataset("x", nil, DatasetOptions{BatchSize: 1})
	require.ErrorContains(t, err, "records are nil")
	_, err = NewDataset("x", recs, DatasetOptions{})
	require.ErrorContains(t, err, "batch size 0 must be at least 1")
	_, err = NewDataset("x", recs, DatasetOptions{BatchSize: 2, Epochs: -1})
	require.ErrorContains(t, err, "epochs -1 must be >= 0")
	_, err = NewDataset("x", recs, DatasetOptions{BatchSize: 6, DropRemainder: true})
	require.ErrorContains(t, err, "batch size 6 is larger than the 5 examples and DropRemainder is set")
	_, err = NewDataset("x", recs, DatasetOptions{BatchSize: 2, Std: [3]float32{1, 0, 1}})
	require.ErrorContains(t, err, "std [1 0 1] must be positive")
	_, err = NewDataset("x", NewRecords(CIFAR10(), "empty", 0), DatasetOptions{BatchSize: 2})
	require.ErrorContains(t, err, "holds no records")
	bad := testRecords(CIFAR10(), 5)
	bad.RawLabels[3] = 10
	_, err = NewDataset("x", bad, DatasetOptions{BatchSize: 2})
	require.ErrorIs(t, err, ErrLabelRange)
	require.ErrorContains(t, err, "record 3")

	// Custom statistics.
	ds, err := NewDataset("x", recs, DatasetOptions{BatchSize: 1, Epochs: 1, Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.5, 0.5, 0.5}})
	require.NoError(t, err)
	hb := collect(t, ds)[0]
	img := recs.Image(0)
	require.InDelta(t, float64(img[0])/255*2-1, float64(hb.Images[0]), 1e-6)
}

func TestDecodeFile(t *testing.T) {
	spec := CIFAR100(LabelsCoarse)
	recs, err := SynthesizeRecords(spec, SplitTrain, SynthOptions{Seed: 1, TrainSize: 2100, TestSize: 1})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "train.bin")
	require.NoError(t, writeFile(path, recs))
	images, labels, err := decodeFile(path, spec)
	require.NoError(t, err)
	require.Equal(t, []int{2100, 32, 32, 3}, images.Shape().Dimensions)
	require.Equal(t, []int{2100, 1}, labels.Shape().Dimensions)
	gotImages := tensors.MustCopyFlatData[float32](images)
	gotLabels := tensors.MustCopyFlatData[int32](labels)
	for _, i := range []int{0, 1, 2047, 2048, 2099} { // across the chunk boundary
		requireDecoded(t, spec, recs.Image(i), gotImages[i*ImageBytes:(i+1)*ImageBytes])
	}
	norm, err := newNormalizer(spec.Mean, spec.Std)
	require.NoError(t, err)
	want := make([]float32, len(gotImages))
	norm.DecodeImages(recs, 0, recs.Len(), want)
	require.True(t, slices.Equal(want, gotImages), "DecodeFile and Normalizer.DecodeImages differ")
	for i := range recs.Len() {
		require.Equal(t, int32(recs.CoarseLabel(i)), gotLabels[i])
	}

	// Bad label deep in the file (in the second chunk).
	data := encodeByHand(recs)
	data[2050*3074+1] = 100
	bad := writeRaw(t, "bad.bin", data)
	_, _, err = decodeFile(bad, spec)
	var fe *FormatError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, 2050, fe.Record)
	require.Equal(t, int64(2050*3074+1), fe.Offset)
	require.ErrorIs(t, err, ErrLabelRange)
	_, _, err = decodeFile(writeRaw(t, "partial.bin", data[:5000]), spec)
	require.ErrorIs(t, err, ErrPartialRecord)
	_, _, err = decodeFile(filepath.Join(t.TempDir(), "missing.bin"), spec)
	require.Error(t, err)
	require.False(t, math.IsNaN(float64(gotImages[0])))
}
