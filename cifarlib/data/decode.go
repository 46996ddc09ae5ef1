package data

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
)

// normalizer turns channel-planar pixel bytes into normalised float32 NHWC values,
// (v/255 - Mean[c]) / Std[c], through a 256-entry table per channel.
type normalizer struct {
	// Mean and Std are the per-channel statistics, on pixel values scaled to [0, 1].
	Mean, Std [ImageChannels]float32
	lut       [ImageChannels][256]float32
}

// newNormalizer returns a normalizer for the given per-channel mean and std (std must be > 0).
func newNormalizer(mean, std [ImageChannels]float32) (*normalizer, error) {
	n := &normalizer{Mean: mean, Std: std}
	for c := range ImageChannels {
		if !(std[c] > 0) {
			return nil, fmt.Errorf("data: normalisation std %v must be positive in every channel", std)
		}
		for v := range 256 {
			n.lut[c][v] = float32((float64(v)/255 - float64(mean[c])) / float64(std[c]))
		}
	}
	return n, nil
}

// Value returns the normalised value of pixel byte v in channel c.
func (n *normalizer) Value(c int, v byte) float32 { return n.lut[c][v] }

// DecodeImage writes one image: planar holds ImageBytes channel-planar bytes (as in Records),
// dst receives ImageBytes float32 values in HWC order (32x32x3).
func (n *normalizer) DecodeImage(planar []byte, dst []float32) {
	const plane = ImageHeight * ImageWidth
	r := planar[0:plane:plane]
	g := planar[plane : 2*plane : 2*plane]
	b := planar[2*plane : 3*plane : 3*plane]
	dst = dst[: 3*plane : 3*plane]
	lr, lg, lb := &n.lut[0], &n.lut[1], &n.lut[2]
	for p := range plane {
		d := dst[3*p : 3*p+3 : 3*p+3]
		d[0] = lr[r[p]]
		d[1] = lg[g[p]]
		d[2] = lb[b[p]]
	}
}

// DecodeImages decodes images [first, first+count) of recs into dst (count*ImageBytes
// float32 values, NHWC), using all CPUs for large counts.
func (n *normalizer) DecodeImages(recs *Records, first, count int, dst []float32) {
	parallelFor(count, 64, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			n.DecodeImage(recs.Image(first+i), dst[i*ImageBytes:(i+1)*ImageBytes])
		}
	})
}

// parallelFor splits [0, n) into contiguous ranges of at least minChunk items over GOMAXPROCS
// goroutines and waits for them.
func parallelFor(n, minChunk int, fn func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/minChunk))
	if workers <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w*n/workers, (w+1)*n/workers)
		}()
	}
	wg.Wait()
}

// specNormalizer returns the normalizer for a spec's Mean and Std.
func specNormalizer(spec Spec) (*normalizer, error) { return newNormalizer(spec.Mean, spec.Std) }

// decodeChunkRecords is the number of records read per chunk while streaming a file (6 MiB).
const decodeChunkRecords = 2048

// decodeFile reads a CIFAR binary file and decodes it straight into tensors: images float32
// [N, 32, 32, 3] (NHWC) normalised with spec.Mean and spec.Std, and labels int32 [N, 1] of the
// spec's label set. It streams the file in chunks and validates it like readFile, so its peak
// memory is the two tensors plus a few MiB. Decoding runs on all CPUs while the next chunk is read.
func decodeFile(path string, spec Spec) (images, labels *tensors.Tensor, err error) {
	if err := checkSpec(spec); err != nil {
		return nil, nil, err
	}
	norm, err := specNormalizer(spec)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("data: opening %s data file: %w", spec.Name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("data: %s: %w", path, err)
	}
	n, err := recordCount(spec, path, fi.Size())
	if err != nil {
		return nil, nil, err
	}
	images = tensors.FromShape(shapes.Make(dtypes.Float32, n, ImageHeight, ImageWidth, ImageChannels))
	labels = tensors.FromShape(shapes.Make(dtypes.Int32, n, 1))
	var decodeErr error
	err = tensors.MutableFlatData(images, func(imgFlat []float32) {
		labelErr := tensors.MutableFlatData(labels, func(labelFlat []int32) {
			decodeErr = decodeStream(f, path, spec, norm, n, imgFlat, labelFlat)
		})
		if decodeErr == nil {
			decodeErr = labelErr
		}
	})
	if err == nil {
		err = decodeErr
	}
	if err != nil {
		_ = images.FinalizeAll()
		_ = labels.FinalizeAll()
		return nil, nil, err
	}
	return images, labels, nil
}

// decodeChunk is a buffer of raw records read from a file.
type decodeChunk struct {
	first int    // index of the first record
	n     int    // records in buf
	buf   []byte // n*RecordBytes bytes
	err   error
}

// decodeStream reads n records from r and decodes them into images (n*ImageBytes, NHWC) and
// labels (n). A reader goroutine fills chunks while the caller decodes the previous one.
func decodeStream(r io.Reader, source string, spec Spec, norm *normalizer, n int, images []float32, labels []int32) error {
	rb := spec.RecordBytes()
	chunks := make(chan *decodeChunk, 1)
	free := make(chan *decodeChunk, 2)
	for range 2 {
		free <- &decodeChunk{buf: make([]byte, min(n, decodeChunkRecords)*rb)}
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(chunks)
		br := bufio.NewReaderSize(r, 64<<10)
		for first := 0; first < n; first += decodeChunkRecords {
			var c *decodeChunk
			select {
			case c = <-free:
			case <-done:
				return
			}
			c.first, c.n = first, min(decodeChunkRecords, n-first)
			got, err := io.ReadFull(br, c.buf[:c.n*rb])
			if err != nil {
				c.err = truncatedError(spec, source, first+got/rb, got%rb)
				if err != io.EOF && err != io.ErrUnexpectedEOF {
					c.err = fmt.Errorf("data: %s: reading record %d: %w", source, first+got/rb, err)
				}
			}
			select {
			case chunks <- c:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	lb, lab := spec.LabelBytes, spec.LabelByte
	for c := range chunks {
		if c.err != nil {
			return c.err
		}
		for i := range c.n {
			rec := c.buf[i*rb : i*rb+lb]
			for j, v := range rec {
				if int(v) >= spec.MaxLabels[j] {
					return checkLabels(spec, source, rec, c.first+i, int64(c.first+i)*int64(rb))
				}
			}
			labels[c.first+i] = int32(rec[lab])
		}
		parallelFor(c.n, 128, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				norm.DecodeImage(c.buf[i*rb+lb:(i+1)*rb], images[(c.first+i)*ImageBytes:(c.first+i+1)*ImageBytes])
			}
		})
		free <- c
	}
	return nil
}
