package data

import (
	"bufio"
	"fmt"
	"io"

	"github.com/cifarlab/cifarlab/internal/atomicfile"
)

// writeRecords writes recs in the CIFAR binary format of recs.Spec: per record the label
// bytes followed by the channel-planar pixels. It refuses records that ReadRecords would
// reject (inconsistent slices or a label byte out of range), so that what it writes always
// reads back byte for byte.
func writeRecords(w io.Writer, recs *Records) error {
	if err := recs.Validate(); err != nil {
		return err
	}
	if recs.Len() == 0 {
		return &FormatError{File: recs.Source, Record: -1, Kind: ErrNoRecords,
			Reason: "no records to write: a CIFAR file must hold at least one record"}
	}
	bw := bufio.NewWriterSize(w, readBufferSize)
	lb := recs.Spec.LabelBytes
	for i := 0; i < recs.Len(); i++ {
		if _, err := bw.Write(recs.RawLabels[i*lb : (i+1)*lb]); err != nil {
			return fmt.Errorf("data: writing record %d of %s: %w", i, recs.Source, err)
		}
		if _, err := bw.Write(recs.Image(i)); err != nil {
			return fmt.Errorf("data: writing record %d of %s: %w", i, recs.Source, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("data: writing %s: %w", recs.Source, err)
	}
	return nil
}

// writeFile writes recs to path atomically: it writes a temporary file in the same folder,
// syncs it and renames it over path, so readers never see a partial file. The folder is
// created if needed.
func writeFile(path string, recs *Records) error {
	return atomicfile.WriteFile(path, func(w io.Writer) error { return writeRecords(w, recs) })
}
