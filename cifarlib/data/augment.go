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
	for y := range ImageHeight {
		sy := reflectIndex(y+dy, ImageHeight)
		for x := range ImageWidth {
			cx := x
			if flip {
				cx = ImageWidth - 1 - x
			}
			sx := reflectIndex(cx+dx, ImageWidth)
			if preflip {
				sx = ImageWidth - 1 - sx
			}
			d := dst[(y*ImageWidth+x)*ImageChannels : (y*ImageWidth+x+1)*ImageChannels]
			for c := range ImageChannels {
				d[c] = norm.lut[c][planar[c*plane+sy*ImageWidth+sx]]
			}
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

// image decodes record ex into dst, augmented.
func (a augmenter) image(ex int, dst []float32) {
	d := a.d
	if d.opts.Augmentation.orDefault() == AugmentAltFlip {
		r := d.translate()
		dy, dx := a.rng.IntN(2*r+1)-r, a.rng.IntN(2*r+1)-r
		altFlipImage(d.norm, d.recs.Image(ex), dst, dy, dx, d.preflip[ex], a.epoch%2 == 1)
		return
	}
	ox, oy := a.rng.IntN(2*augmentPadding+1), a.rng.IntN(2*augmentPadding+1)
	flip := a.rng.IntN(2) == 1
	augmentImage(d.norm, d.recs.Image(ex), dst, ox, oy, flip)
}

// translate returns AugmentAltFlip's translation range.
func (d *Dataset) translate() int {
	if d.opts.Translate == 0 {
		return DefaultTranslate
	}
	return d.opts.Translate
}
