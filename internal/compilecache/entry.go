package compilecache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
)

// Key names one compiled program: a digest of everything its compiled code depends on (the
// caller's: cifarlib/backends hashes the program's bytes, its compile options, the devices, the
// plugin and the machine). An entry's file is named by it, and holds it too.
type Key [sha256.Size]byte

// String is the key in hexadecimal, an entry's file name without its extension.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// Meta describes an entry for people (`cifarlab cache` lists it); nothing is decided by it.
type Meta struct {
	// Program is the program's name (its StableHLO module's), Plugin the plugin that compiled it
	// and Machine the hardware it was compiled for.
	Program string `json:"program,omitempty"`
	Plugin  string `json:"plugin,omitempty"`
	Machine string `json:"machine,omitempty"`
	// MachineID identifies the hardware of its key (the CPU and GPUs; cifarlib/backends' digest
	// of them): an entry of another MachineID never loads on this machine (SharedFits).
	MachineID string `json:"machine_id,omitempty"`
	// CompileSeconds is how long its compile took.
	CompileSeconds float64 `json:"compile_seconds,omitempty"`
}

// The layout of an entry file, all integers little-endian:
//
//	magic   8 bytes  "cfxlaprg"
//	version uint32   formatVersion
//	key     32 bytes the Key the entry was stored under
//	metaLen uint32, then metaLen bytes of Meta as JSON
//	dataLen uint64, then dataLen bytes: the serialized executable
//	sum     32 bytes SHA-256 of everything above
//
// A file is read whole, its lengths checked against its size before anything is allocated.
const (
	magic         = "cfxlaprg"
	formatVersion = 1
	headerLen     = len(magic) + 4 + sha256.Size
	minEntryLen   = headerLen + 4 + 8 + sha256.Size
	maxMetaLen    = 1 << 16
)

// encodeEntry writes the entry of data under key to w.
func encodeEntry(w io.Writer, key Key, meta Meta, data []byte) error {
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.Grow(minEntryLen + len(metaJSON) + len(data))
	b.WriteString(magic)
	_ = binary.Write(&b, binary.LittleEndian, uint32(formatVersion))
	b.Write(key[:])
	_ = binary.Write(&b, binary.LittleEndian, uint32(len(metaJSON)))
	b.Write(metaJSON)
	_ = binary.Write(&b, binary.LittleEndian, uint64(len(data)))
	b.Write(data)
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	_, err = w.Write(b.Bytes())
	return err
}

// BrokenError says why an entry file cannot be used.
type BrokenError struct {
	// Path is the entry's file; Reason what is wrong with it.
	Path, Reason string
}

func (e *BrokenError) Error() string {
	return fmt.Sprintf("compile cache: entry %s is %s", e.Path, e.Reason)
}

// decodeEntry checks raw, the whole file of the entry stored under want, and returns its meta
// and data (a slice of raw), or a *BrokenError naming path.
func decodeEntry(path string, raw []byte, want Key) (Meta, []byte, error) {
	broken := func(format string, args ...any) (Meta, []byte, error) {
		return Meta{}, nil, &BrokenError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(raw) == 0:
		return broken("empty (zero bytes)")
	case len(raw) < minEntryLen || string(raw[:len(magic)]) != magic:
		if len(raw) >= len(magic) && string(raw[:len(magic)]) == magic {
			return broken("truncated (%d bytes)", len(raw))
		}
		return broken("not a compile cache entry")
	}
	if v := binary.LittleEndian.Uint32(raw[len(magic):]); v != formatVersion {
		return broken("of format version %d, not %d", v, formatVersion)
	}
	body, sum := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	metaLen := uint64(binary.LittleEndian.Uint32(raw[headerLen:]))
	if metaLen > maxMetaLen || uint64(headerLen+4)+metaLen+8 > uint64(len(body)) {
		return broken("truncated or corrupt (its lengths exceed its %d bytes)", len(raw))
	}
	dataAt := uint64(headerLen+4) + metaLen + 8
	if dataLen := binary.LittleEndian.Uint64(raw[dataAt-8:]); dataLen != uint64(len(body))-dataAt {
		return broken("truncated or corrupt (%d bytes of program, %d present)", dataLen, uint64(len(body))-dataAt)
	}
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return broken("corrupt (its checksum does not match)")
	}
	var stored Key
	copy(stored[:], raw[len(magic)+4:headerLen])
	if stored != want {
		return broken("another program's (stored under key %s)", stored.String()[:16])
	}
	var meta Meta
	if err := json.Unmarshal(raw[headerLen+4:dataAt-8], &meta); err != nil {
		return broken("corrupt (its description: %v)", err)
	}
	return meta, raw[dataAt:len(body):len(body)], nil
}
