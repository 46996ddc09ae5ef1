// Package torchfile reads the weights of a PyTorch file written by torch.save in the zip
// format (torch >= 1.6) with torch.load(..., weights_only=True) semantics: nothing in the file
// is executed. The pickle (PREFIX/data.pkl) is decoded by gopickle's unpickler behind a lexer
// that bounds every length by the bytes present and refuses opcodes and globals outside a
// state_dict's (internal/pickle, and globals.go); storages are read from the entries
// PREFIX/data/KEY, each allocation bounded by the bytes of its entry, and every tensor's size,
// stride and offset are checked against its storage.
//
// The pickle goes through internal/pickle, the codec the CIFAR reader uses, with torch's globals
// (globals.go) instead of NumPy's. gopickle's own pytorch package is not used: it allocates a
// storage's declared element count before reading anything.
package torchfile

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"strings"

	"github.com/nlpodyssey/gopickle/types"

	"github.com/cifarlab/cifarlab/internal/pickle"
)

// File is a decoded torch.save file.
type File struct {
	// Name is the file name given to Read.
	Name string
	// Prefix is the archive's record name (the folder of data.pkl inside the zip).
	Prefix string
	// Root is the saved object: a *Dict for a state_dict (or a checkpoint dict wrapping one),
	// holding *Tensor, *Dict, []any (lists and tuples), string, []byte, int, float64, bool and
	// nil values.
	Root any
}

// Dict is a Python dict or OrderedDict, in insertion order (Keys[i] maps to Values[i]).
type Dict struct {
	Keys   []any
	Values []any
	index  map[any]int
}

// Len returns the number of entries.
func (d *Dict) Len() int { return len(d.Keys) }

// Get returns the value of a string key.
func (d *Dict) Get(key string) (any, bool) {
	if d.index == nil { // a Dict built by hand
		for i, k := range d.Keys {
			if k == key {
				return d.Values[i], true
			}
		}
		return nil, false
	}
	i, ok := d.index[key]
	if !ok {
		return nil, false
	}
	return d.Values[i], true
}

// decoder holds the state of one Read.
type decoder struct {
	name     string
	zr       *zip.Reader
	size     int64
	prefix   string
	entry    string
	storages map[string]*Storage
	// refuse is the pickle decoder's Options.Refuse while the pickle is decoded (the error then
	// names the opcode's offset), nil before and after.
	refuse func(kind error, value, reason string) error
}

// fail returns the error of kind: at the opcode being decoded while the pickle is, else
// without an offset.
func (d *decoder) fail(kind error, value, format string, args ...any) error {
	reason := fmt.Sprintf(format, args...)
	if d.refuse != nil {
		return d.refuse(kind, value, reason)
	}
	return &Error{File: d.name, Entry: d.entry, Offset: -1, Value: value, Kind: kind, Reason: reason}
}

// ReadFile reads a torch.save file; see Read.
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("torchfile: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("torchfile: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("torchfile: %s is not a regular file", path)
	}
	return Read(f, fi.Size(), path)
}

// Read decodes a torch.save zip file of size bytes from r; name labels errors. Refusals are
// *Error values of kind ErrUnsafe, ErrFormat, ErrTruncated or ErrDType.
func Read(r io.ReaderAt, size int64, name string) (*File, error) {
	d := &decoder{name: name, size: size, storages: map[string]*Storage{}}
	var magic [4]byte
	if n, _ := r.ReadAt(magic[:], 0); n < 4 || string(magic[:]) != "PK\x03\x04" {
		return nil, d.notZip(magic[:n])
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, &Error{File: name, Offset: -1, Kind: ErrTruncated, Reason: fmt.Sprintf("not a complete zip archive (%v): "+
			"the file ends before the zip's directory, as after an interrupted download or copy; torch.load fails on it too: "+
			"copy or save it again", err)}
	}
	d.zr = zr
	pkl, err := d.findPickle()
	if err != nil {
		return nil, err
	}
	if err := d.checkByteOrder(); err != nil {
		return nil, err
	}
	data, err := d.readEntry(pkl, maxPickleBytes, "data.pkl")
	if err != nil {
		return nil, err
	}
	d.entry = pkl.Name
	root, err := d.unpickle(data)
	if err != nil {
		return nil, err
	}
	v, err := d.convert(root, map[any]any{}, 0)
	if err != nil {
		return nil, err
	}
	return &File{Name: name, Prefix: d.prefix, Root: v}, nil
}

// notZip explains the files that are not zips: the legacy torch.save format, or anything else.
func (d *decoder) notZip(magic []byte) error {
	if len(magic) > 0 && magic[0] == 0x80 {
		return &Error{File: d.name, Offset: -1, Kind: ErrFormat, Reason: "the legacy torch.save format (torch < 1.6, or " +
			"_use_new_zipfile_serialization=False) is not read: save it again in PyTorch with " +
			"torch.save(torch.load(OLD, weights_only=True), NEW)"}
	}
	return &Error{File: d.name, Offset: -1, Value: fmt.Sprintf("first bytes %q", magic), Kind: ErrFormat,
		Reason: "not a torch.save file (a zip archive starting with PK): save the weights with torch.save(model.state_dict(), FILE)"}
}

// findPickle finds the one PREFIX/data.pkl of the archive.
func (d *decoder) findPickle() (*zip.File, error) {
	var found *zip.File
	torchscript := false
	for _, f := range d.zr.File {
		prefix, rest, ok := strings.Cut(f.Name, "/")
		if !ok {
			continue
		}
		if rest == "constants.pkl" || strings.HasPrefix(rest, "code/") {
			torchscript = true
		}
		if rest != "data.pkl" {
			continue
		}
		if found != nil {
			return nil, &Error{File: d.name, Offset: -1, Value: found.Name + ", " + f.Name, Kind: ErrFormat,
				Reason: "two data.pkl entries: not a file torch.save wrote"}
		}
		found, d.prefix = f, prefix
	}
	switch {
	case torchscript:
		return nil, &Error{File: d.name, Offset: -1, Kind: ErrFormat, Reason: "a TorchScript archive (torch.jit.save) holds code, " +
			"which is not read: in PyTorch, load it and save the weights with torch.save(model.state_dict(), FILE)"}
	case found == nil:
		return nil, &Error{File: d.name, Offset: -1, Kind: ErrFormat, Reason: "a zip without a data.pkl entry: not a file torch.save wrote"}
	}
	return found, nil
}

// checkByteOrder refuses a big-endian file (PREFIX/byteorder, absent before torch 1.13: little).
func (d *decoder) checkByteOrder() error {
	for _, f := range d.zr.File {
		if f.Name != d.prefix+"/byteorder" {
			continue
		}
		b, err := d.readEntry(f, 16, "byteorder")
		if err != nil {
			return err
		}
		if string(b) != "little" {
			return &Error{File: d.name, Entry: f.Name, Offset: -1, Value: fmt.Sprintf("%q", b), Kind: ErrFormat,
				Reason: "only little-endian files are read: save it on a little-endian machine (x86-64, ARM)"}
		}
	}
	return nil
}

// readEntry reads a whole stored entry of at most limit bytes; the entry must lie inside the
// file, so the allocation is bounded by bytes present.
func (d *decoder) readEntry(f *zip.File, limit int64, what string) ([]byte, error) {
	fail := func(kind error, format string, args ...any) error {
		return &Error{File: d.name, Entry: f.Name, Offset: -1, Kind: kind, Reason: fmt.Sprintf(format, args...)}
	}
	if f.Method != zip.Store {
		return nil, fail(ErrFormat, "entry is compressed (method %d): torch.save stores %s uncompressed; "+
			"load the file in PyTorch and save it again instead of recompressing the zip", f.Method, what)
	}
	off, err := f.DataOffset()
	if err != nil {
		return nil, fail(ErrTruncated, "the entry's header is unreadable (%v): the file is incomplete; copy or save it again", err)
	}
	n := f.UncompressedSize64
	if n != f.CompressedSize64 || off < 0 || n > uint64(d.size-off) {
		return nil, fail(ErrTruncated, "the entry declares %d bytes but the file ends %d bytes after its start: the file is "+
			"incomplete; copy or save it again", n, d.size-off)
	}
	if n > uint64(limit) {
		return nil, fail(ErrFormat, "%s has %d bytes, more than the %d a state_dict needs", what, n, limit)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fail(ErrFormat, "%v", err)
	}
	defer rc.Close()
	buf := make([]byte, n)
	if _, err := io.ReadFull(rc, buf); err != nil {
		return nil, fail(ErrTruncated, "reading %s: %v: the file is incomplete or corrupt; copy or save it again", what, err)
	}
	// The zip reader checks the CRC-32 when the entry's end is read.
	if _, err := rc.Read(make([]byte, 1)); err != nil && !errors.Is(err, io.EOF) {
		return nil, fail(ErrFormat, "reading %s: %v: the file is corrupt; copy or save it again", what, err)
	}
	return buf, nil
}

// readStorage reads PREFIX/data/KEY: exactly numel elements of dtype.
func (d *decoder) readStorage(key string, dtype DType, numel int) (*Storage, error) {
	name := d.prefix + "/data/" + key
	var entry *zip.File
	for _, f := range d.zr.File {
		if f.Name == name {
			entry = f
			break
		}
	}
	if entry == nil {
		return nil, d.fail(ErrFormat, "storage "+key, "the zip has no entry %s: the file is incomplete; copy or save it again", name)
	}
	want := uint64(numel) * uint64(dtype.Size())
	if numel > 0 && want/uint64(numel) != uint64(dtype.Size()) || want != entry.UncompressedSize64 {
		return nil, d.fail(ErrFormat, "storage "+key, "the storage declares %d %s elements (%d bytes) but its entry %s holds %d bytes: "+
			"the file is corrupt or was crafted", numel, dtype, want, name, entry.UncompressedSize64)
	}
	data, err := d.readEntry(entry, d.size, "a storage")
	if err != nil {
		return nil, err
	}
	return &Storage{Key: key, DType: dtype, Numel: numel, Data: data}, nil
}

// maxPickleBytes bounds data.pkl: a ResNet-18 state_dict's is about 10 KB (a few hundred bytes
// per tensor).
const maxPickleBytes = 8 << 20

// maxPickleOps bounds its opcodes (about 25 per tensor), and so what gopickle allocates for
// them (a MARK costs it a new stack).
const maxPickleOps = 1 << 17

// unpickle decodes data.pkl with internal/pickle (the CIFAR reader's codec: a lexer that bounds
// every length by the bytes present and refuses the opcodes a state_dict never needs, before
// gopickle's unpickler), with torch's globals and storages as the only Go stand-ins.
func (d *decoder) unpickle(data []byte) (any, error) {
	o := &pickle.Options{Source: d.name, Size: int64(len(data)), MaxOps: maxPickleOps,
		What: "a state_dict pickle", Fix: "the file is incomplete; copy or save it again",
		Allowed:   "torch's tensor rebuild functions, storage types and collections.OrderedDict (torch.load(..., weights_only=True) refuses it too)",
		Truncated: ErrTruncated, Layout: ErrFormat, Unsafe: ErrUnsafe,
		Fail: func(kind error, offset int64, value, reason string) error {
			return &Error{File: d.name, Entry: d.entry, Offset: offset, Value: value, Kind: kind, Reason: reason}
		},
		Globals: d.findClass, PersistentLoad: d.persistentLoad, OrderedDict: true}
	defer func() { d.refuse = nil }()
	d.refuse = func(kind error, value, reason string) error { return o.Refuse(kind, value, reason) }
	return pickle.Decode(bytes.NewReader(data), o)
}

// maxDepth bounds the nesting of the decoded containers.
const maxDepth = 32

// convert turns gopickle's values into File's; seen maps containers already converted (a
// pickle may share one many times) and refuses cycles.
func (d *decoder) convert(v any, seen map[any]any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, d.fail(ErrFormat, "", "containers nested deeper than %d levels: not a state_dict", maxDepth)
	}
	switch x := v.(type) {
	case nil, bool, int, float64, string, []byte, *Tensor:
		return x, nil
	case *big.Int:
		return nil, d.fail(ErrFormat, x.String(), "integer wider than 64 bits: not a state_dict value")
	case *types.Tuple, *types.List, *types.Dict, *types.OrderedDict:
		if c, ok := seen[x]; ok {
			if c == nil {
				return nil, d.fail(ErrFormat, "", "a container contains itself: not a state_dict")
			}
			return c, nil
		}
		seen[x] = nil
		c, err := d.convertContainer(x, seen, depth)
		if err != nil {
			return nil, err
		}
		seen[x] = c
		return c, nil
	}
	return nil, d.fail(ErrFormat, describe(v), "a value a state_dict does not hold")
}

func (d *decoder) convertContainer(v any, seen map[any]any, depth int) (any, error) {
	var items []any
	switch x := v.(type) {
	case *types.Tuple:
		items = *x
	case *types.List:
		items = *x
	case *types.Dict:
		out := &Dict{}
		for _, e := range *x {
			if err := d.addEntry(out, e.Key, e.Value, seen, depth); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *types.OrderedDict:
		if len(x.PyDict) > 0 {
			if _, ok := x.PyDict["_metadata"]; !ok || len(x.PyDict) > 1 {
				return nil, d.fail(ErrFormat, "", "an OrderedDict with attributes other than a state_dict's _metadata")
			}
		}
		out := &Dict{}
		for e := x.List.Front(); e != nil; e = e.Next() {
			entry := e.Value.(*types.OrderedDictEntry)
			if err := d.addEntry(out, entry.Key, entry.Value, seen, depth); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	out := make([]any, len(items))
	for i, item := range items {
		c, err := d.convert(item, seen, depth+1)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// addEntry adds a converted key and value to a Dict, refusing duplicate keys.
func (d *decoder) addEntry(out *Dict, k, v any, seen map[any]any, depth int) error {
	switch k.(type) {
	case string, int, bool, nil, float64:
	default:
		return d.fail(ErrFormat, describe(k), "dict key is not a string or number")
	}
	if out.index == nil {
		out.index = map[any]int{}
	}
	if _, dup := out.index[k]; dup {
		return d.fail(ErrFormat, describe(k), "dict key appears twice")
	}
	out.index[k] = len(out.Keys)
	c, err := d.convert(v, seen, depth+1)
	if err != nil {
		return err
	}
	out.Keys, out.Values = append(out.Keys, k), append(out.Values, c)
	return nil
}

// describe formats a decoded value for an error message: internal/pickle's ShortValue, with
// tensors by dtype and shape.
func describe(v any) string {
	if t, ok := v.(*Tensor); ok {
		return "tensor " + t.String()
	}
	return pickle.ShortValue(v)
}
