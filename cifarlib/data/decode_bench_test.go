package data

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"
)

// benchRecords is the size of the benchmark file: the CIFAR-100 training split.
const benchRecords = 50000

// decodedTensorBytes is the size of the decoded float32 images of the benchmark file.
const decodedTensorBytes = benchRecords * ImageBytes * 4

// writeBenchFile writes a 50,000-record CIFAR-100 file with pseudo-random pixels and valid
// labels to a temporary folder (with writeFile; not timed) and returns its path.
func writeBenchFile(b *testing.B) string {
	b.Helper()
	spec := CIFAR100(LabelsFine)
	recs := NewRecords(spec, "bench", benchRecords)
	x := uint64(0x9e3779b97f4a7c15)
	for i := 0; i+8 <= len(recs.Pixels); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		for k := range 8 {
			recs.Pixels[i+k] = byte(x >> (8 * k))
		}
	}
	for i := range benchRecords {
		recs.RawLabels[2*i+1] = byte(i % 100)
		recs.RawLabels[2*i] = byte(CIFAR100CoarseOf(i % 100))
	}
	path := filepath.Join(b.TempDir(), "train.bin")
	if err := writeFile(path, recs); err != nil {
		b.Fatal(err)
	}
	return path
}

// procStatusKB reads a field (e.g. "VmHWM") of /proc/self/status in KiB; -1 if unavailable.
func procStatusKB(field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// measurePeak runs fn once and returns the growth of the process's peak resident memory
// (VmHWM, after resetting it through /proc/self/clear_refs) and of the Go heap's total
// allocations, both in bytes. peakRSS is -1 where /proc does not allow the measurement.
func measurePeak(fn func()) (peakRSS, allocated int64) {
	runtime.GC()
	debug.FreeOSMemory()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	peakRSS = -1
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err == nil {
		base := procStatusKB("VmRSS")
		fn()
		if hwm := procStatusKB("VmHWM"); base >= 0 && hwm >= 0 {
			peakRSS = (hwm - base) * 1024
		}
	} else {
		fn()
	}
	runtime.ReadMemStats(&after)
	return peakRSS, int64(after.TotalAlloc - before.TotalAlloc)
}

// reportDecode reports throughput and memory metrics of a decode benchmark.
func reportDecode(b *testing.B, decode func() (*tensors.Tensor, *tensors.Tensor)) {
	free := func(images, labels *tensors.Tensor) {
		_ = images.FinalizeAll()
		_ = labels.FinalizeAll()
	}
	peakRSS, allocated := measurePeak(func() { free(decode()) })
	b.SetBytes(benchRecords * int64(CIFAR100(LabelsFine).RecordBytes()))
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	for b.Loop() {
		free(decode())
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	seconds := func(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }
	b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "images/s")
	b.ReportMetric(1000*(seconds(ru1.Utime)-seconds(ru0.Utime))/float64(b.N), "user-ms/op")
	b.ReportMetric(1000*(seconds(ru1.Stime)-seconds(ru0.Stime))/float64(b.N), "sys-ms/op")
	b.ReportMetric(float64(allocated)/decodedTensorBytes, "alloc/tensor")
	if peakRSS >= 0 {
		b.ReportMetric(float64(peakRSS)/decodedTensorBytes, "peakRSS/tensor")
	}
}

// BenchmarkDecodeCIFAR100 decodes a 50,000-record CIFAR-100 file into normalised float32
// NHWC images and int32 labels with decodeFile. MB/s counts file bytes. alloc/tensor is the
// Go heap allocated by one decode over the size of the decoded image tensor (614.4 MB): an
// upper bound of its peak heap; peakRSS/tensor is the growth of peak resident memory.
func BenchmarkDecodeCIFAR100(b *testing.B) {
	path := writeBenchFile(b)
	spec := CIFAR100(LabelsFine)
	reportDecode(b, func() (*tensors.Tensor, *tensors.Tensor) {
		images, labels, err := decodeFile(path, spec)
		if err != nil {
			b.Fatal(err)
		}
		return images, labels
	})
}

// BenchmarkDecodeCIFAR100GoMLXStyle decodes the same file the way GoMLX's examples/cifar
// loader does, for comparison: one unbuffered Read per record from the os.File, and for
// each record a MutableFlatData call on the image tensor with a per-pixel loop that
// converts and stores each element (value/255, no mean/std normalisation), int64 labels.
func BenchmarkDecodeCIFAR100GoMLXStyle(b *testing.B) {
	path := writeBenchFile(b)
	reportDecode(b, func() (*tensors.Tensor, *tensors.Tensor) {
		images, labels, err := gomlxStyleLoad(path, benchRecords)
		if err != nil {
			b.Fatal(err)
		}
		return images, labels
	})
}

// gomlxStyleLoad reproduces the approach of GoMLX's examples/cifar LoadCifar100 for one file of n records.
func gomlxStyleLoad(path string, n int) (images, labels *tensors.Tensor, err error) {
	images = tensors.FromShape(shapes.Make(dtypes.Float32, n, ImageHeight, ImageWidth, ImageChannels))
	labels = tensors.FromShape(shapes.Make(dtypes.Int64, n, 1))
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var record [ImageBytes + 2]byte
	tensors.MustMutableFlatData(labels, func(labelData []int64) {
		for example := 0; ; example++ {
			n, rerr := f.Read(record[:])
			if n == 0 && rerr == io.EOF {
				return
			}
			if rerr != nil || n != len(record) {
				err = fmt.Errorf("read %d bytes of example %d: %v", n, example, rerr)
				return
			}
			tensors.MustMutableFlatData(images, func(data []float32) {
				pos := example * ImageBytes
				for h := range ImageHeight {
					for w := range ImageWidth {
						for d := range ImageChannels {
							data[pos] = float32(record[2+d*ImageHeight*ImageWidth+h*ImageWidth+w]) / float32(255)
							pos++
						}
					}
				}
			})
			labelData[example] = int64(record[1])
		}
	})
	return images, labels, err
}

// benchInMemory returns the records of the benchmark file, in memory, for the kernel benchmarks.
func benchInMemory(b *testing.B) *Records {
	recs, err := readFile(writeBenchFile(b), CIFAR100(LabelsFine))
	if err != nil {
		b.Fatal(err)
	}
	return recs
}

// BenchmarkDecodeKernel measures the pixel work alone: normalizer.DecodeImages from records
// in memory into a reused float32 buffer (no file reading, no allocation, no page faults).
func BenchmarkDecodeKernel(b *testing.B) {
	recs := benchInMemory(b)
	norm, err := newNormalizer(recs.Spec.Mean, recs.Spec.Std)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]float32, benchRecords*ImageBytes)
	norm.DecodeImages(recs, 0, benchRecords, dst) // fault the pages in
	b.SetBytes(int64(len(recs.Pixels)))
	b.ResetTimer()
	for b.Loop() {
		norm.DecodeImages(recs, 0, benchRecords, dst)
	}
	b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "images/s")
}

// BenchmarkDecodeKernelGoMLXStyle is the same pixel work done the GoMLX examples/cifar way:
// a MutableFlatData call per image and a per-pixel loop converting and dividing each element.
func BenchmarkDecodeKernelGoMLXStyle(b *testing.B) {
	recs := benchInMemory(b)
	images := tensors.FromShape(shapes.Make(dtypes.Float32, benchRecords, ImageHeight, ImageWidth, ImageChannels))
	b.SetBytes(int64(len(recs.Pixels)))
	b.ResetTimer()
	for b.Loop() {
		for example := range benchRecords {
			img := recs.Image(example)
			tensors.MustMutableFlatData(images, func(data []float32) {
				pos := example * ImageBytes
				for h := range ImageHeight {
					for w := range ImageWidth {
						for d := range ImageChannels {
							data[pos] = float32(img[d*ImageHeight*ImageWidth+h*ImageWidth+w]) / float32(255)
							pos++
						}
					}
				}
			})
		}
	}
	b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "images/s")
}

// TestGoMLXStyleLoaderAgrees checks that the comparison loader decodes like decodeFile (up
// to the mean/std step), so that the two benchmarks compare the same work.
func TestGoMLXStyleLoaderAgrees(t *testing.T) {
	spec := CIFAR100(LabelsFine)
	recs, err := SynthesizeRecords(spec, SplitTest, SynthOptions{TrainSize: 1, TestSize: 7})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "test.bin")
	require.NoError(t, writeFile(path, recs))
	images, labels, err := gomlxStyleLoad(path, 7)
	require.NoError(t, err)
	ours, ourLabels, err := decodeFile(path, spec)
	require.NoError(t, err)
	theirs := tensors.MustCopyFlatData[float32](images)
	mine := tensors.MustCopyFlatData[float32](ours)
	for i, v := range theirs {
		c := i % 3
		require.InDelta(t, float64(v), float64(mine[i]*spec.Std[c]+spec.Mean[c]), 1e-6)
	}
	theirLabels := tensors.MustCopyFlatData[int64](labels)
	for i, l := range tensors.MustCopyFlatData[int32](ourLabels) {
		require.Equal(t, int64(l), theirLabels[i])
		require.Equal(t, int64(recs.FineLabel(i)), theirLabels[i])
	}
}
