package data

import (
	"errors"

	"github.com/cifarlab/cifarlab/internal/archive"
)

// Sentinel errors of the data stage. The typed errors wrap them, so callers test the kind with
// errors.Is and read the details with errors.As: a *FormatError wraps exactly one of the format
// kinds (ErrPartialRecord to ErrInconsistent), a *PickleError one of ErrTruncated,
// ErrLabelRange, ErrNoRecords (with the same meaning as for binary files), ErrUnsafePickle or
// ErrPickleLayout, and a *LabelRangeError matches ErrLabelOutOfRange.
var (
	// ErrPartialRecord: a file's size is not a whole number of records.
	ErrPartialRecord = errors.New("size is not a whole number of records")
	// ErrTruncated: the data ended in the middle of a record.
	ErrTruncated = errors.New("truncated record")
	// ErrLabelRange: a label byte is outside the spec's class range.
	ErrLabelRange = errors.New("label byte out of range")
	// ErrNoRecords: a file or stream holds no records at all.
	ErrNoRecords = errors.New("no records")
	// ErrInconsistent: a Records value whose slices disagree in length with each other or its Spec.
	ErrInconsistent = errors.New("inconsistent records")

	// ErrUnsafePickle: the pickle names a global other than numpy's array and dtype
	// reconstructors, or uses an opcode that builds or looks up arbitrary objects. Nothing of it
	// is executed.
	ErrUnsafePickle = errors.New("unsafe pickle")
	// ErrPickleLayout: the pickle is well-formed but not a CIFAR batch or meta file: wrong or
	// missing keys, a wrong array shape or dtype, lists of the wrong length or element type.
	ErrPickleLayout = errors.New("not a CIFAR pickle")

	// ErrLabelOutOfRange: a label is outside [0, numClasses) (host guard or in-graph guard).
	ErrLabelOutOfRange = errors.New("data: label out of range")

	// ErrNotVerified is wrapped by Verify's errors: the verified data is absent or incomplete.
	ErrNotVerified = errors.New("no verified data")
	// ErrChecksum is wrapped when a downloaded (or pre-placed) archive does not have the
	// expected SHA-256.
	ErrChecksum = errors.New("SHA-256 mismatch")
	// ErrUnsafeArchive is wrapped by every refusal of an archive entry: absolute paths, "..",
	// links, special files, unexpected names or sizes, duplicates.
	ErrUnsafeArchive = archive.ErrUnsafe
	// ErrIncompleteArchive is wrapped when an archive ends early or lacks some data file.
	ErrIncompleteArchive = archive.ErrIncomplete
)
