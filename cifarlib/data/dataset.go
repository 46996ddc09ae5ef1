package data

import (
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"sync/atomic"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/train"
)

// augmentPadding is the padding, in pixels, of the random-crop augmentation.
const augmentPadding = 4

// HostBatch is one batch decoded on the host, before it becomes tensors.
type HostBatch struct {
	// Number counts the batches yielded since the iteration started (0-based, across epochs).
	Number int
	// Epoch is the 0-based index of the batch's epoch among all epochs started on the
	// Dataset (it keeps counting across Iter calls, until Reset).
	Epoch int
	// Examples holds the index, in the Records, of each example of the batch.
	Examples []int
	// Images holds len(Examples)*32*32*3 float32 values, NHWC, normalised (and augmented if asked).
	Images []float32
	// Labels holds the label of each example in the Spec's label set.
	Labels []int32
}

// Size returns the number of examples in the batch.
func (b *HostBatch) Size() int { return len(b.Labels) }

// DatasetOptions configures NewDataset.
type DatasetOptions struct {
	// BatchSize is the number of examples per batch (required, >= 1).
	BatchSize int
	// Shuffle shuffles the examples each epoch, deterministically from Seed and the epoch's
	// index (HostBatch.Epoch), so successive epochs, also those of successive Iter calls as
	// in train.Loop.RunEpochs, see different orders.
	Shuffle bool
	// Seed seeds shuffling and augmentation.
	Seed int64
	// Epochs is the number of passes over the data; 0 means infinite (for Loop.RunSteps).
	Epochs int
	// DropRemainder drops the last, smaller batch of each epoch, so that every batch has
	// BatchSize examples (one compiled graph). Use it for training.
	DropRemainder bool
	// Augment augments every image with the scheme Augmentation names (by default a random
	// crop with 4-pixel zero padding and a random horizontal flip), deterministically from Seed
	// and the epoch's index. Use it for training only.
	Augment bool
	// Augmentation is the scheme Augment applies: AugmentCropFlip (or "", the default) or
	// AugmentAltFlip (airbench's alternating flip and reflect-padded translation, whose
	// alternation follows HostBatch.Epoch). Unused when Augment is false.
	Augmentation Augmentation
	// Translate is AugmentAltFlip's translation range in pixels: each image is shifted by up
	// to Translate pixels in each direction; 0 means DefaultTranslate (2, as airbench).
	// Must be 0 for AugmentCropFlip.
	Translate int
	// Check, if set, is called with every batch before its tensors are made (a host-side
	// label guard). If it returns an error, the iteration yields that error (wrapped, so
	// errors.Is and errors.As see it) and stops. The batch must not be kept after Check returns.
	Check func(*HostBatch) error
	// Mean and Std override the normalisation statistics; if Std is all zero the Spec's
	// Mean and Std are used.
	Mean, Std [ImageChannels]float32
}

// Dataset feeds Records to GoMLX: it implements the train.Dataset interface of GoMLX v0.28,
// yielding batches with Inputs = [images float32 [B, 32, 32, 3]] and Labels = [int32 [B, 1]].
// Records stay compact in memory; each batch is decoded (and augmented) when it is yielded.
// A Dataset can be iterated many times: each Iter call runs opts.Epochs epochs (or forever),
// and the epochs are numbered on from those of earlier calls, so shuffling and augmentation
// differ between calls yet are reproducible from the Seed (call Reset to start again at epoch 0).
type Dataset struct {
	name string
	recs *Records
	opts DatasetOptions
	norm *normalizer
	// preflip holds AugmentAltFlip's pre-flip of each record (nil for other schemes).
	preflip []bool
	// epochs counts the epochs started, across Iter calls.
	epochs atomic.Int64
}

var _ train.Dataset = (*Dataset)(nil)

// NewDataset returns a Dataset over recs. It checks the options and the records (every
// label within the Spec's class range).
func NewDataset(name string, recs *Records, opts DatasetOptions) (*Dataset, error) {
	if recs == nil {
		return nil, errors.New("data: NewDataset: records are nil: load them with LoadSplit or ReadFile")
	}
	if err := recs.Validate(); err != nil {
		return nil, err
	}
	n := recs.Len()
	switch {
	case n == 0:
		return nil, fmt.Errorf("data: dataset %q: %s holds no records", name, recs.Source)
	case opts.BatchSize < 1:
		return nil, fmt.Errorf("data: dataset %q: batch size %d must be at least 1", name, opts.BatchSize)
	case opts.Epochs < 0:
		return nil, fmt.Errorf("data: dataset %q: epochs %d must be >= 0 (0 means infinite)", name, opts.Epochs)
	case opts.DropRemainder && opts.BatchSize > n:
		return nil, fmt.Errorf("data: dataset %q: batch size %d is larger than the %d examples and DropRemainder is set: "+
			"no batch would be produced; use a smaller batch size or more data", name, opts.BatchSize, n)
	}
	if err := checkAugmentation(opts); err != nil {
		return nil, fmt.Errorf("data: dataset %q: %w", name, err)
	}
	mean, std := recs.Spec.Mean, recs.Spec.Std
	if opts.Std != ([ImageChannels]float32{}) {
		mean, std = opts.Mean, opts.Std
	}
	norm, err := newNormalizer(mean, std)
	if err != nil {
		return nil, fmt.Errorf("data: dataset %q: %w", name, err)
	}
	d := &Dataset{name: name, recs: recs, opts: opts, norm: norm}
	if opts.Augment && opts.Augmentation.orDefault() == AugmentAltFlip {
		d.preflip = preflips(opts.Seed, n)
	}
	return d, nil
}

// Reset makes the next epoch epoch 0 again, so that an iteration repeats the first one exactly.
func (d *Dataset) Reset() { d.epochs.Store(0) }

// Name implements train.Dataset.
func (d *Dataset) Name() string { return d.name }

// NumExamples returns the number of records (examples per epoch, before DropRemainder).
func (d *Dataset) NumExamples() int { return d.recs.Len() }

// BatchesPerEpoch returns the number of batches yielded per epoch.
func (d *Dataset) BatchesPerEpoch() int {
	n, b := d.recs.Len(), d.opts.BatchSize
	if d.opts.DropRemainder {
		return n / b
	}
	return (n + b - 1) / b
}

// Spec returns the Spec of the records (which label set, how many classes).
func (d *Dataset) Spec() Spec { return d.recs.Spec }

// Records returns the records the dataset reads.
func (d *Dataset) Records() *Records { return d.recs }

// Options returns the options the dataset was made with.
func (d *Dataset) Options() DatasetOptions { return d.opts }

// String implements fmt.Stringer.
func (d *Dataset) String() string {
	return fmt.Sprintf("Dataset %q: %d examples of %s, batch %d", d.name, d.recs.Len(), d.recs.Spec, d.opts.BatchSize)
}

// Iter implements train.Dataset: it yields batches with Inputs = [float32 [B, 32, 32, 3]]
// and Labels = [int32 [B, 1]]. Ownership of the tensors passes to the caller.
func (d *Dataset) Iter() iter.Seq2[train.Batch, error] {
	return func(yield func(train.Batch, error) bool) {
		for hb, err := range d.batches(true) {
			if err != nil {
				yield(train.Batch{}, err)
				return
			}
			b := hb.Size()
			images := tensors.FromFlatDataAndDimensions(hb.Images, b, ImageHeight, ImageWidth, ImageChannels)
			labels := tensors.FromFlatDataAndDimensions(hb.Labels, b, 1)
			if !yield(train.Batch{Inputs: []*tensors.Tensor{images}, Labels: []*tensors.Tensor{labels}}, nil) {
				return
			}
		}
	}
}

// HostBatches yields the same batches as Iter, as host slices (each batch freshly allocated,
// so it may be kept).
func (d *Dataset) HostBatches() iter.Seq2[*HostBatch, error] { return d.batches(false) }

// Salts separating the shuffling, augmentation and pre-flip (AugmentAltFlip) random streams.
const (
	shuffleSalt = 0x5348_5546_464c_4500
	augmentSalt = 0x4155_474d_454e_5400
	preflipSalt = 0x5052_4546_4c49_5000
)

// batches is the iteration behind Iter and HostBatches; reuse recycles the image buffer.
func (d *Dataset) batches(reuse bool) iter.Seq2[*HostBatch, error] {
	return func(yield func(*HostBatch, error) bool) {
		n, size := d.recs.Len(), d.opts.BatchSize
		order := make([]int, n)
		var buf []float32
		number := 0
		for pass := 0; d.opts.Epochs == 0 || pass < d.opts.Epochs; pass++ {
			epoch := int(d.epochs.Add(1) - 1)
			for i := range order {
				order[i] = i
			}
			if d.opts.Shuffle {
				rng := rand.New(rand.NewPCG(uint64(d.opts.Seed)^shuffleSalt, uint64(epoch)))
				rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
			}
			aug := newAugmenter(d, epoch)
			for start := 0; start < n; start += size {
				end := min(start+size, n)
				if end-start < size && d.opts.DropRemainder {
					break
				}
				hb := d.hostBatch(order[start:end], number, epoch, aug, reuse, &buf)
				if err := d.check(hb); err != nil {
					yield(nil, err)
					return
				}
				if !yield(hb, nil) {
					return
				}
				number++
			}
		}
	}
}

// hostBatch is batch number of the epoch: the examples, their labels and their images
// (decoded, augmented when the dataset augments, by aug), into *buf when reuse and it is large
// enough (else a new buffer, kept in *buf when reuse).
func (d *Dataset) hostBatch(examples []int, number, epoch int, aug augmenter, reuse bool, buf *[]float32) *HostBatch {
	b := len(examples)
	hb := &HostBatch{Number: number, Epoch: epoch, Examples: append([]int(nil), examples...), Labels: make([]int32, b)}
	if reuse && cap(*buf) >= b*ImageBytes {
		hb.Images = (*buf)[:b*ImageBytes]
	} else {
		hb.Images = make([]float32, b*ImageBytes)
		if reuse {
			*buf = hb.Images
		}
	}
	for k, ex := range hb.Examples {
		hb.Labels[k] = int32(d.recs.Label(ex))
		if !d.opts.Augment {
			d.norm.DecodeImage(d.recs.Image(ex), hb.Images[k*ImageBytes:(k+1)*ImageBytes])
		}
	}
	if d.opts.Augment {
		aug.batch(hb.Examples, hb.Images)
	}
	return hb
}

// check runs the dataset's Check on hb, its error naming the dataset, the batch and the epoch.
func (d *Dataset) check(hb *HostBatch) error {
	if d.opts.Check == nil {
		return nil
	}
	err := d.opts.Check(hb)
	if err == nil {
		return nil
	}
	var lre *LabelRangeError
	if errors.As(err, &lre) && lre.Batch == hb.Number {
		// The guard's message starts with the batch number already.
		return fmt.Errorf("data: dataset %q (epoch %d): %w", d.name, hb.Epoch, err)
	}
	return fmt.Errorf("data: dataset %q batch %d (epoch %d): %w", d.name, hb.Number, hb.Epoch, err)
}

// augmentImage decodes planar into dst (HWC) as the 32x32 crop at (ox, oy) of the image
// padded with augmentPadding black pixels on each side, then mirrored left-right if flip
// (the order of torchvision's RandomCrop(32, padding=4) + RandomHorizontalFlip).
func augmentImage(norm *normalizer, planar []byte, dst []float32, ox, oy int, flip bool) {
	const plane = ImageHeight * ImageWidth
	for y := range ImageHeight {
		sy := y + oy - augmentPadding
		for x := range ImageWidth {
			cx := x
			if flip {
				cx = ImageWidth - 1 - x
			}
			sx := cx + ox - augmentPadding
			d := dst[(y*ImageWidth+x)*ImageChannels : (y*ImageWidth+x+1)*ImageChannels]
			if sy < 0 || sy >= ImageHeight || sx < 0 || sx >= ImageWidth {
				for c := range ImageChannels {
					d[c] = norm.lut[c][0]
				}
				continue
			}
			for c := range ImageChannels {
				d[c] = norm.lut[c][planar[c*plane+sy*ImageWidth+sx]]
			}
		}
	}
}
