package data

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// coordImages returns n hand-made images whose pixels tell where they are: channel 0 holds
// 8*x, channel 1 8*y and channel 2 the image's index, so every pixel of a view says which
// source pixel it shows.
func coordImages(n int) *Records {
	recs := NewRecords(CIFAR10(), "coordinate images", n)
	const plane = ImageHeight * ImageWidth
	for i := range n {
		img := recs.Pixels[i*ImageBytes : (i+1)*ImageBytes]
		for y := range ImageHeight {
			for x := range ImageWidth {
				img[y*ImageWidth+x] = byte(8 * x)
				img[plane+y*ImageWidth+x] = byte(8 * y)
				img[2*plane+y*ImageWidth+x] = byte(i)
			}
		}
		recs.RawLabels[i] = byte(i % 10)
	}
	return recs
}

// hwcImage is an image as rows of pixels of channels, for the reference below.
type hwcImage [][][]byte

func toHWC(planar []byte) hwcImage {
	const plane = ImageHeight * ImageWidth
	img := make(hwcImage, ImageHeight)
	for y := range img {
		img[y] = make([][]byte, ImageWidth)
		for x := range img[y] {
			img[y][x] = []byte{planar[y*ImageWidth+x], planar[plane+y*ImageWidth+x], planar[2*plane+y*ImageWidth+x]}
		}
	}
	return img
}

func mirror(img hwcImage) hwcImage {
	out := make(hwcImage, len(img))
	for y, row := range img {
		out[y] = slices.Clone(row)
		slices.Reverse(out[y])
	}
	return out
}

// reflectPadRow pads a row by p on each side the way PyTorch's F.pad(mode='reflect') does:
// the p pixels after the first, mirrored, in front; the p before the last, mirrored, behind.
func reflectPadRow[T any](row []T, p int) []T {
	front := slices.Clone(row[1 : p+1])
	slices.Reverse(front)
	back := slices.Clone(row[len(row)-1-p : len(row)-1])
	slices.Reverse(back)
	return slices.Concat(front, row, back)
}

// airbenchView is the reference: airbench's CifarLoader steps done literally on whole arrays
// (pre-flip, F.pad reflect by r, crop at (r+dy, r+dx), flip on odd epochs).
func airbenchView(img hwcImage, r, dy, dx int, preflip, flip bool) hwcImage {
	if preflip {
		img = mirror(img)
	}
	padded := make(hwcImage, len(img))
	for y, row := range img {
		padded[y] = reflectPadRow(row, r)
	}
	padded = reflectPadRow(padded, r)
	out := make(hwcImage, ImageHeight)
	for y := range out {
		out[y] = padded[r+dy+y][r+dx : r+dx+ImageWidth]
	}
	if flip {
		out = mirror(out)
	}
	return out
}

// decodeHWC is img normalised with spec's statistics, as the dataset yields it.
func decodeHWC(spec Spec, img hwcImage) []float32 {
	norm, _ := newNormalizer(spec.Mean, spec.Std)
	out := make([]float32, 0, ImageBytes)
	for _, row := range img {
		for _, px := range row {
			for c, v := range px {
				out = append(out, norm.Value(c, v))
			}
		}
	}
	return out
}

func TestReflectIndex(t *testing.T) {
	for _, tc := range []struct{ i, n, want int }{
		{0, 32, 0}, {31, 32, 31}, {5, 32, 5},
		{-1, 32, 1}, {-2, 32, 2}, {-31, 32, 31}, // the edge pixel 0 is not repeated
		{32, 32, 30}, {33, 32, 29}, {62, 32, 0},
		{-1, 2, 1}, {2, 2, 0},
	} {
		require.Equal(t, tc.want, reflectIndex(tc.i, tc.n), "reflectIndex(%d, %d)", tc.i, tc.n)
	}
}

// TestAltFlipImageEdges checks single pixels of altFlipImage, chosen by hand at the edges,
// where reflect padding matters.
func TestAltFlipImageEdges(t *testing.T) {
	recs := coordImages(1)
	spec, img := recs.Spec, recs.Image(0)
	norm, err := newNormalizer(spec.Mean, spec.Std)
	require.NoError(t, err)
	got := make([]float32, ImageBytes)
	for _, tc := range []struct {
		name               string
		dy, dx             int
		preflip, flip      bool
		y, x, wantY, wantX int
	}{
		{"identity", 0, 0, false, false, 7, 9, 7, 9},
		{"up-left: pixel -2 reads 2", -2, -2, false, false, 0, 0, 2, 2},
		{"up-left: pixel -1 reads 1", -2, -2, false, false, 1, 1, 1, 1},
		{"up-left: pixel 0 is itself", -2, -2, false, false, 2, 2, 0, 0},
		{"down-right: pixel 33 reads 29", 2, 2, false, false, 31, 31, 29, 29},
		{"down-right: pixel 32 reads 30", 2, 2, false, false, 30, 30, 30, 30},
		{"down-right: pixel 31 is itself", 2, 2, false, false, 29, 29, 31, 31},
		{"mixed shift", 1, -2, false, false, 31, 0, 30, 2},
		{"pre-flip, then shift left: -1 of the mirror is its 1, source 30", 0, -1, true, false, 4, 0, 4, 30},
		{"pre-flip, no shift", 0, 0, true, false, 4, 3, 4, 28},
		{"odd-epoch flip after shift: x 0 shows shifted 31, source reflect(32)=30", 0, 1, false, true, 5, 0, 5, 30},
		{"odd-epoch flip after shift: x 31 shows shifted 0, source 1", 0, 1, false, true, 5, 31, 5, 1},
		{"both flips cancel into the opposite shift", 0, 2, true, true, 6, 0, 6, 2},
		{"both flips, right edge", 0, 2, true, true, 6, 31, 6, 29},
	} {
		altFlipImage(norm, img, got, tc.dy, tc.dx, tc.preflip, tc.flip)
		for c := range ImageChannels {
			want := float32(wantPixel(spec, img, tc.wantY, tc.wantX, c))
			require.InDelta(t, want, got[(tc.y*ImageWidth+tc.x)*ImageChannels+c], 1e-6, "%s: pixel (%d, %d) channel %d", tc.name, tc.y, tc.x, c)
		}
	}
}

// TestAltFlipImageMatchesAirbench compares whole images with the literal reference for every
// shift of translate 2 and every flip combination.
func TestAltFlipImageMatchesAirbench(t *testing.T) {
	recs := testRecords(CIFAR10(), 2)
	norm, err := newNormalizer(recs.Spec.Mean, recs.Spec.Std)
	require.NoError(t, err)
	got := make([]float32, ImageBytes)
	for i := range recs.Len() {
		img := toHWC(recs.Image(i))
		for dy := -2; dy <= 2; dy++ {
			for dx := -2; dx <= 2; dx++ {
				for _, pre := range []bool{false, true} {
					for _, flip := range []bool{false, true} {
						altFlipImage(norm, recs.Image(i), got, dy, dx, pre, flip)
						want := decodeHWC(recs.Spec, airbenchView(img, 2, dy, dx, pre, flip))
						require.Equal(t, want, got, "image %d dy=%d dx=%d preflip=%v flip=%v", i, dy, dx, pre, flip)
					}
				}
			}
		}
	}
}

// view is what an AugmentAltFlip image was made of, as found by identifyView: its shift and
// whether it is mirrored overall (pre-flip XOR odd-epoch flip; a mirror, a shift by dx and a
// mirror again is a shift by -dx, so only the overall mirroring can be seen).
type view struct {
	dy, dx   int
	mirrored bool
}

// identifyView finds the view of img (translate up to r) that hwc is, if any.
func identifyView(t *testing.T, spec Spec, img []byte, hwc []float32, r int) (view, bool) {
	t.Helper()
	ref := toHWC(img)
	for dy := -r; dy <= r; dy++ {
		for dx := -r; dx <= r; dx++ {
			for _, m := range []bool{false, true} {
				if slices.Equal(decodeHWC(spec, airbenchView(ref, r, dy, dx, false, m)), hwc) {
					return view{dy, dx, m}, true
				}
			}
		}
	}
	return view{}, false
}

// TestDatasetAltFlip checks the scheme over epochs: every image is a view of its source, all
// (2r+1)^2 shifts occur and no other, about half the images are pre-flipped, and every image
// is mirrored one epoch and not the next.
func TestDatasetAltFlip(t *testing.T) {
	const n, epochs = 64, 12
	recs := coordImages(n)
	for _, tc := range []struct{ translate, r int }{{0, DefaultTranslate}, {1, 1}} {
		ds, err := NewDataset("altflip", recs, DatasetOptions{BatchSize: 16, Shuffle: true, Seed: 5, Epochs: epochs,
			DropRemainder: true, Augment: true, Augmentation: AugmentAltFlip, Translate: tc.translate})
		require.NoError(t, err)
		mirrored := make([][]bool, epochs) // [epoch][example]
		for e := range mirrored {
			mirrored[e] = make([]bool, n)
		}
		shifts := map[[2]int]int{}
		seen := 0
		for _, hb := range collect(t, ds) {
			for j, ex := range hb.Examples {
				v, ok := identifyView(t, recs.Spec, recs.Image(ex), hb.Images[j*ImageBytes:(j+1)*ImageBytes], tc.r)
				require.True(t, ok, "translate %d: epoch %d example %d is no altflip view of its image", tc.translate, hb.Epoch, ex)
				mirrored[hb.Epoch][ex] = v.mirrored
				shifts[[2]int{v.dy, v.dx}]++
				seen++
			}
		}
		require.Equal(t, n*epochs, seen)
		// (2r+1)^2 shifts over 768 draws: a given shift is missing with probability
		// (1-1/25)^768 < 1e-13, so each must occur.
		require.Len(t, shifts, (2*tc.r+1)*(2*tc.r+1), "translate %d: shifts seen %v", tc.translate, shifts)
		pre := 0
		for ex := range n {
			if mirrored[0][ex] {
				pre++
			}
			for e := 1; e < epochs; e++ {
				require.Equal(t, mirrored[0][ex] != (e%2 == 1), mirrored[e][ex], "example %d epoch %d: mirrored iff pre-flipped XOR odd epoch", ex, e)
			}
		}
		// Binomial(64, 1/2): mean 32, standard deviation 4; 5 deviations either side.
		require.InDelta(t, 32, pre, 20, "pre-flipped images of 64")
	}
}

// TestDatasetAltFlipDeterministic checks that the pre-flip and the shifts come from Seed and
// the epoch: a second dataset, or Reset, repeats them; another seed does not.
func TestDatasetAltFlipDeterministic(t *testing.T) {
	recs := testRecords(CIFAR10(), 40)
	opts := DatasetOptions{BatchSize: 8, Shuffle: true, Seed: 9, Epochs: 3, DropRemainder: true, Augment: true, Augmentation: AugmentAltFlip}
	a, err := NewDataset("a", recs, opts)
	require.NoError(t, err)
	b, err := NewDataset("b", recs, opts)
	require.NoError(t, err)
	first := collect(t, a)
	require.Equal(t, first, collect(t, b))
	a.Reset()
	require.Equal(t, first, collect(t, a))
	require.Equal(t, 2, first[len(first)-1].Epoch)

	opts.Seed = 10
	c, err := NewDataset("c", recs, opts)
	require.NoError(t, err)
	require.NotEqual(t, first[0].Images, collect(t, c)[0].Images)
	require.NotEqual(t, preflips(9, 40), preflips(10, 40))
}

func TestAugmentationOptions(t *testing.T) {
	recs := testRecords(CIFAR10(), 4)
	for _, tc := range []struct {
		name    string
		opts    DatasetOptions
		wantErr string
	}{
		{"default", DatasetOptions{Augment: true}, ""},
		{"crop-flip", DatasetOptions{Augment: true, Augmentation: AugmentCropFlip}, ""},
		{"altflip", DatasetOptions{Augment: true, Augmentation: AugmentAltFlip, Translate: 3}, ""},
		{"altflip, largest translate", DatasetOptions{Augment: true, Augmentation: AugmentAltFlip, Translate: 31}, ""},
		{"unknown", DatasetOptions{Augment: true, Augmentation: "mixup"}, `data: dataset "t": unknown augmentation "mixup": use "crop-flip"`},
		{"negative translate", DatasetOptions{Augment: true, Augmentation: AugmentAltFlip, Translate: -1}, "translate -1 is outside [0, 31]"},
		{"translate past the image", DatasetOptions{Augment: true, Augmentation: AugmentAltFlip, Translate: 32}, "translate 32 is outside [0, 31]"},
		{"translate with crop-flip", DatasetOptions{Augment: true, Translate: 2}, `translate 2 applies only to augmentation "altflip-translate", not "crop-flip"`},
	} {
		tc.opts.BatchSize = 2
		_, err := NewDataset("t", recs, tc.opts)
		if tc.wantErr == "" {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorContains(t, err, tc.wantErr, tc.name)
		}
	}
	for _, a := range Augmentations() {
		got, err := ParseAugmentation(a.String())
		require.NoError(t, err)
		require.Equal(t, a, got)
	}
	got, err := ParseAugmentation("")
	require.NoError(t, err)
	require.Equal(t, AugmentCropFlip, got)
	_, err = ParseAugmentation("altflip")
	require.ErrorContains(t, err, `data: unknown augmentation "altflip"`)
}
