// Package tfevents writes TensorBoard event files: TFRecord files of Event protocol buffers
// holding scalar summaries, the format `tensorboard --logdir` reads.
//
// There is no maintained Go writer for it on the Go module proxy (the few that exist wrap
// TensorFlow's Go bindings and are unmaintained), so this is a small one for the documented
// format: TFRecord framing (tensorflow/core/lib/io/record_writer.cc) with masked CRC-32C, and
// the three messages a scalar needs (Event, Summary, SessionLog of
// tensorboard/compat/proto/{event,summary}.proto), encoded field by field with
// google.golang.org/protobuf's protowire rather than generated code.
package tfevents

import (
	"encoding/binary"
	"hash/crc32"
)

// castagnoli is the CRC-32C table TFRecord checksums use.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is TFRecord's masked CRC-32C of b: the CRC rotated right by 15 bits plus a constant,
// so that a CRC stored inside the data it covers does not checksum to itself.
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// appendRecord appends data framed as one TFRecord: the length as a little-endian uint64, the
// masked CRC of those 8 bytes, the data, and the masked CRC of the data.
func appendRecord(b, data []byte) []byte {
	start := len(b)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(data)))
	b = binary.LittleEndian.AppendUint32(b, maskedCRC(b[start:start+8]))
	b = append(b, data...)
	return binary.LittleEndian.AppendUint32(b, maskedCRC(data))
}
