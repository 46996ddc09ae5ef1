package data

import (
	"fmt"
	"math/rand/v2"
)

// Augmentation names a training augmentation scheme: what DatasetOptions.Augment applies.
type Augmentation string

const (
	// AugmentCropFlip, the default (also the empty Augmentation), crops every image at random
	// from the image padded with 4 black pixels per side and mirrors it left-right with
	// probability 1/2, afresh each epoch: torchvision's RandomCrop(32, padding=4) followed by
	// RandomHorizontalFlip.
	AugmentCropFlip Augmentation = "crop-flip"
	// AugmentAltFlip is airbench's scheme (airbench 0.1.8, utils.py: CifarLoader.__iter__ with
	// aug=dict(flip=True, translate=2) and altflip=True, batch_flip_lr, batch_crop):
	//   - once, before the first epoch, every image is mirrored left-right with probability
	//     1/2 (the "pre-flip"; drawn from the Seed alone, so every epoch sees the same one);
	//   - every epoch every image is translated by (dy, dx), each drawn uniformly from
	//     [-Translate, Translate], with reflect padding (PyTorch's F.pad mode 'reflect': the
	//     edge pixel is not repeated, so the pixel at -1 is the one at 1);
	//   - on odd epochs (1, 3, ...) every image is mirrored, on top of its pre-flip: the
	//     "alternating flip", so each image is seen both ways in any two successive epochs.
	// Use it with Shuffle and DropRemainder, as airbench does.
	AugmentAltFlip Augmentation = "altflip-translate"
)

// DefaultTranslate is AugmentAltFlip's translation range, in pixels, when
// DatasetOptions.Translate is 0: airbench's translate=2, so 25 shifts.
const DefaultTranslate = 2

// maxTranslate is the largest translation reflect padding can serve: PyTorch's 'reflect'
// requires the padding to be smaller than the image.
const maxTranslate = ImageWidth - 1

// Augmentations lists the augmentation schemes, the default first.
func Augmentations() []Augmentation { return []Augmentation{AugmentCropFlip, AugmentAltFlip} }

// ParseAugmentation returns the Augmentation named s ("" is AugmentCropFlip), or an error
// listing the names.
func ParseAugmentation(s string) (Augmentation, error) {
	a := Augmentation(s)
	if err := a.check(); err != nil {
		return "", fmt.Errorf("data: %w", err)
	}
	return a.orDefault(), nil
}

// String implements fmt.Stringer: the scheme's name, "crop-flip" for the empty Augmentation.
func (a Augmentation) String() string { return string(a.orDefault()) }

func (a Augmentation) orDefault() Augmentation {
	if a == "" {
		return AugmentCropFlip
	}
	return a
}

func (a Augmentation) check() error {
	switch a {
	case "", AugmentCropFlip, AugmentAltFlip:
		return nil
	}
	return fmt.Errorf("unknown augmentation %q: use %q (random crop with 4-pixel padding and random flip, the default) or %q (airbench's alternating flip and reflect-padded translation)",
		string(a), AugmentCropFlip, AugmentAltFlip)
}

// checkAugmentation checks the augmentation options of opts.
func checkAugmentation(opts DatasetOptions) error {
	if err := opts.Augmentation.check(); err != nil {
		return err
	}
	switch {
	case opts.Translate < 0 || opts.Translate > maxTranslate:
		return fmt.Errorf("translate %d is outside [0, %d] (0 means the default, %d)", opts.Translate, maxTranslate, DefaultTranslate)
	case opts.Translate != 0 && opts.Augmentation.orDefault() != AugmentAltFlip:
		return fmt.Errorf("translate %d applies only to augmentation %q, not %q: set Augmentation to %q or leave Translate 0",
			opts.Translate, AugmentAltFlip, opts.Augmentation.orDefault(), AugmentAltFlip)
	}
	return nil
}

// preflips draws AugmentAltFlip's pre-flip of each of n images from seed alone.
func preflips(seed int64, n int) []bool {
	rng := rand.New(rand.NewPCG(uint64(seed)^preflipSalt, 0))
	flips := make([]bool, n)
	for i := range flips {
		flips[i] = rng.IntN(2) == 1
	}
	return flips
}

// reflectIndex is the index in [0, n) that PyTorch's 'reflect' padding reads for index i in
// [-(n-1), 2n-2]: the edge is not repeated, so -1 reads 1 and n reads n-2.
func reflectIndex(i, n int) int {
	if i < 0 {
		return -i
	}
	if i >= n {
		return 2*(n-1) - i
	}
	return i
}

// altFlipImage decodes planar into dst (HWC) as airbench's CifarLoader makes an AugmentAltFlip
// training image: the image mirrored left-right if preflip, then translated by (dy, dx) with
// reflect padding (output pixel (y, x) reads (y+dy, x+dx)), then mirrored again if flip.
func altFlipImage(norm *normalizer, planar []byte, dst []float32, dy, dx int, preflip, flip bool) {
	const plane = ImageHeight * ImageWidth
	// The source column of each output column: the same for every row.
	var cols [ImageWidth]uint8
	for x := range cols {
		cx := x
		if flip {
			cx = ImageWidth - 1 - x
		}
		sx := reflectIndex(cx+dx, ImageWidth)
		if preflip {
			sx = ImageWidth - 1 - sx
		}
		cols[x] = uint8(sx)
	}
	lr, lg, lb := &norm.lut[0], &norm.lut[1], &norm.lut[2]
	for y := range ImageHeight {
		row := reflectIndex(y+dy, ImageHeight) * ImageWidth
		r := planar[row : row+ImageWidth : row+ImageWidth]
		g := planar[plane+row : plane+row+ImageWidth : plane+row+ImageWidth]
		b := planar[2*plane+row : 2*plane+row+ImageWidth : 2*plane+row+ImageWidth]
		out := dst[y*ImageWidth*ImageChannels : (y+1)*ImageWidth*ImageChannels : (y+1)*ImageWidth*ImageChannels]
		for x, sx := range cols {
			// sx < ImageWidth = 32; the mask lets the compiler drop the bounds checks.
			d := out[3*x : 3*x+3 : 3*x+3]
			d[0] = lr[r[sx&(ImageWidth-1)]]
			d[1] = lg[g[sx&(ImageWidth-1)]]
			d[2] = lb[b[sx&(ImageWidth-1)]]
		}
	}
}

// augmenter applies the dataset's augmentation to one epoch's images, drawing from rng in
// the order the images are yielded.
type augmenter struct {
	d     *Dataset
	rng   *rand.Rand
	epoch int
}

// augDraw is what augmenter draws for one image: the crop offsets (ox, oy) and flip of
// AugmentCropFlip, or the shift (dy, dx) of AugmentAltFlip.
type augDraw struct {
	a, b int
	flip bool
}

// newAugmenter returns the augmenter of d's epoch: its draws come from Seed and the epoch alone.
func newAugmenter(d *Dataset, epoch int) augmenter {
	return augmenter{d: d, rng: rand.New(rand.NewPCG(uint64(d.opts.Seed)^augmentSalt, uint64(epoch))), epoch: epoch}
}

// draw makes the draws of the next count images, one image after the other.
func (a augmenter) draw(count int) []augDraw {
	altFlip := a.d.opts.Augmentation.orDefault() == AugmentAltFlip
	draws := make([]augDraw, count)
	for k := range draws {
		if altFlip {
			r := a.d.translate()
			draws[k] = augDraw{a: a.rng.IntN(2*r+1) - r, b: a.rng.IntN(2*r+1) - r}
		} else {
			draws[k] = augDraw{a: a.rng.IntN(2*augmentPadding + 1), b: a.rng.IntN(2*augmentPadding + 1), flip: a.rng.IntN(2) == 1}
		}
	}
	return draws
}

// batch decodes the records examples into images (len(examples)*ImageBytes, NHWC),
// augmented: the draws are made one image after the other, as the images are yielded (so they
// depend only on Seed, the epoch and the order), then the images are made on all CPUs.
func (a augmenter) batch(examples []int, images []float32) {
	d := a.d
	altFlip := d.opts.Augmentation.orDefault() == AugmentAltFlip
	draws := a.draw(len(examples))
	parallelFor(len(examples), 64, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			ex, dw, dst := examples[k], draws[k], images[k*ImageBytes:(k+1)*ImageBytes]
			if altFlip {
				altFlipImage(d.norm, d.recs.Image(ex), dst, dw.a, dw.b, d.preflip[ex], a.epoch%2 == 1)
			} else {
				augmentImage(d.norm, d.recs.Image(ex), dst, dw.a, dw.b, dw.flip)
			}
		}
	})
}

// translate returns AugmentAltFlip's translation range.
func (d *Dataset) translate() int {
	if d.opts.Translate == 0 {
		return DefaultTranslate
	}
	return d.opts.Translate
}
