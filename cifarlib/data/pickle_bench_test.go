package data

import (
	"os"
	"path/filepath"
	"testing"
)

// recordsBytes is the size of the pixels of the benchmark file (153.6 MB), the unit of the
// memory metrics of the Records benchmarks.
const recordsBytes = benchRecords * ImageBytes

// reportRecords reports throughput and memory metrics of a benchmark that reads the 50,000
// benchmark records into Records: images/s, alloc/records (Go heap allocated by one read over
// the 153.6 MB of pixels: 1.0 means no copy beyond the result) and peakRSS/records (growth of
// peak resident memory over the same).
func reportRecords(b *testing.B, read func() *Records) {
	peakRSS, allocated := measurePeak(func() {
		if recs := read(); recs.Len() != benchRecords {
			b.Fatalf("read %d records, want %d", recs.Len(), benchRecords)
		}
	})
	b.SetBytes(recordsBytes)
	b.ResetTimer()
	for b.Loop() {
		read()
	}
	b.StopTimer()
	b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "images/s")
	b.ReportMetric(float64(allocated)/recordsBytes, "alloc/records")
	if peakRSS >= 0 {
		b.ReportMetric(float64(peakRSS)/recordsBytes, "peakRSS/records")
	}
}

// BenchmarkReadFileCIFAR100 reads the 50,000-record binary train.bin into Records with
// readFile: the baseline of BenchmarkReadPickleCIFAR100.
func BenchmarkReadFileCIFAR100(b *testing.B) {
	path := writeBenchFile(b)
	reportRecords(b, func() *Records {
		recs, err := readFile(path, CIFAR100(LabelsFine))
		if err != nil {
			b.Fatal(err)
		}
		return recs
	})
}

// BenchmarkReadPickleCIFAR100 reads the same 50,000 records from a cifar-100-python/train
// pickle (written as Python 2's cPickle writes the official file: protocol 2, BINSTRING
// pixels, 50,000 filenames and two label lists) with LoadSplit, which detects the python
// layout, reads the meta file and decodes the pickle with gopickle.
func BenchmarkReadPickleCIFAR100(b *testing.B) {
	spec := CIFAR100(LabelsFine)
	recs, err := readFile(writeBenchFile(b), spec)
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	dir := filepath.Join(root, "cifar-100-python")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "train"), py2Batch(recs), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "meta"), py2Meta(spec), 0o644); err != nil {
		b.Fatal(err)
	}
	recs = nil
	reportRecords(b, func() *Records {
		got, err := LoadSplit(root, spec, SplitTrain)
		if err != nil {
			b.Fatal(err)
		}
		return got
	})
}
