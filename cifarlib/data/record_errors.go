package data

import (
	"fmt"
)

// FormatError reports CIFAR binary data that does not match its Spec: it names the file,
// the index of the offending record and the byte offset of the problem within the file.
type FormatError struct {
	// File is the file name (or the description given to ReadRecords).
	File string
	// Record is the 0-based index of the offending record, or -1 when the problem is not about one record.
	Record int
	// Offset is the byte offset of the problem within the file.
	Offset int64
	// Reason says what is wrong, and how to fix it, in words.
	Reason string
	// Kind is one of ErrPartialRecord, ErrTruncated, ErrLabelRange, ErrNoRecords, ErrInconsistent.
	Kind error
}

// Error implements error: "data: FILE: record R at byte offset O: REASON".
func (e *FormatError) Error() string {
	if e.Record < 0 {
		return fmt.Sprintf("data: %s: at byte offset %d: %s", e.File, e.Offset, e.Reason)
	}
	return fmt.Sprintf("data: %s: record %d at byte offset %d: %s", e.File, e.Record, e.Offset, e.Reason)
}

// Unwrap returns the kind of the error (ErrTruncated, ErrLabelRange, ...), for errors.Is.
func (e *FormatError) Unwrap() error { return e.Kind }

// labelByteName names the label byte j of a spec for messages: "label" for CIFAR-10,
// "coarse label" and "fine label" for CIFAR-100.
func labelByteName(spec Spec, j int) string {
	if spec.LabelBytes == 2 {
		if j == 0 {
			return "coarse label"
		}
		return "fine label"
	}
	return "label"
}

// checkSpec reports a Spec that cannot describe a record layout (for example the zero value).
func checkSpec(spec Spec) error {
	if spec.LabelBytes < 1 || len(spec.MaxLabels) != spec.LabelBytes || spec.LabelByte < 0 ||
		spec.LabelByte >= spec.LabelBytes || spec.NumClasses < 1 {
		return fmt.Errorf("data: invalid Spec %q (LabelBytes=%d, MaxLabels=%v, LabelByte=%d, NumClasses=%d): "+
			"use CIFAR10(), CIFAR100(...) or SpecByName", spec.Name, spec.LabelBytes, spec.MaxLabels,
			spec.LabelByte, spec.NumClasses)
	}
	for _, m := range spec.MaxLabels {
		if m < 1 || m > 256 {
			return fmt.Errorf("data: invalid Spec %q: MaxLabels %v must be in [1, 256]", spec.Name, spec.MaxLabels)
		}
	}
	return nil
}

// checkLabels validates the label bytes of one record. recordIndex and fileOffset locate
// the record for the error message.
func checkLabels(spec Spec, source string, labels []byte, recordIndex int, fileOffset int64) error {
	for j, b := range labels {
		if int(b) < spec.MaxLabels[j] {
			continue
		}
		reason := fmt.Sprintf("%s byte is %d, outside the %s class range [0, %d)",
			labelByteName(spec, j), b, spec.Name, spec.MaxLabels[j])
		if spec.Name == "cifar10" {
			reason += "; is this a CIFAR-100 file (or not a CIFAR file at all)? Use the dataset cifar100, CIFAR100(...), for CIFAR-100 data"
		} else {
			reason += "; the file is corrupt or not a CIFAR-100 binary file: re-download or regenerate it"
		}
		return &FormatError{File: source, Record: recordIndex, Offset: fileOffset + int64(j), Reason: reason, Kind: ErrLabelRange}
	}
	return nil
}
