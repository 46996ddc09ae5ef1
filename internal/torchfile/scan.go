package torchfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The pickle is checked opcode by opcode, as pickletools.genops walks it, before gopickle's
// unpickler sees it. The scan
//   - bounds every length field by the bytes left in data.pkl, so that gopickle (which
//     allocates a string's declared length before reading it) never allocates more than the
//     entry holds;
//   - refuses the opcodes a state_dict never needs and that build or look up arbitrary objects
//     (INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4, text PERSID, out-of-band buffers);
//   - refuses the globals gopickle resolves itself without asking FindClass (__builtin__.object,
//     copy_reg._reconstructor), whether named by GLOBAL or by strings for STACK_GLOBAL; every
//     other global goes through findClass's allow-list;
//   - bounds the nesting of MARKs (each costs gopickle a new stack);
//   - checks that the pickle ends at its STOP opcode.

const (
	// maxPickleBytes bounds data.pkl: a ResNet-18 state_dict's is about 10 KB (a few hundred
	// bytes per tensor).
	maxPickleBytes = 8 << 20
	// maxMarkDepth bounds nested MARKs: a state_dict's pickle nests three deep.
	maxMarkDepth = 64
	// maxLine bounds the text argument of protocol-0 opcodes.
	maxLine = 512
)

// gopickleModules are the modules of the globals gopickle resolves without calling FindClass
// (collections.OrderedDict, which torch's allow-list has too, is not among them).
var gopickleModules = map[string]bool{"__builtin__": true, "copy_reg": true}

// scanner walks a pickle.
type scanner struct {
	data  []byte
	pos   int
	opAt  int
	depth int
	fail  func(kind error, at int, value, format string, args ...any) error
}

// scanPickle checks data (a whole data.pkl); fail builds the error at an offset.
func scanPickle(data []byte, fail func(kind error, at int, value, format string, args ...any) error) error {
	s := &scanner{data: data, fail: fail}
	for {
		if s.pos >= len(data) {
			return s.truncated("the next opcode")
		}
		s.opAt = s.pos
		op := data[s.pos]
		s.pos++
		stop, err := s.op(op)
		if err != nil {
			return err
		}
		if stop {
			if s.pos != len(data) {
				return fail(ErrFormat, s.pos, fmt.Sprintf("%d bytes", len(data)-s.pos),
					"bytes after the pickle's STOP opcode: the file is corrupt; save it again with torch.save")
			}
			return nil
		}
	}
}

func (s *scanner) truncated(what string) error {
	return s.fail(ErrTruncated, s.opAt, "", "the pickle ends (after %d bytes) inside %s: the file is incomplete; copy or save it again",
		len(s.data), what)
}

// take consumes n argument bytes.
func (s *scanner) take(n int, what string) ([]byte, error) {
	if n < 0 || n > len(s.data)-s.pos {
		return nil, s.truncated(what)
	}
	b := s.data[s.pos : s.pos+n]
	s.pos += n
	return b, nil
}

// line consumes a newline-terminated argument and returns it without the newline.
func (s *scanner) line() ([]byte, error) {
	rest := s.data[s.pos:]
	i := bytes.IndexByte(rest, '\n')
	if i < 0 {
		return nil, s.truncated("a text argument")
	}
	if i > maxLine {
		return nil, s.fail(ErrFormat, s.opAt, "", "text argument longer than %d bytes: not a state_dict pickle", maxLine)
	}
	s.pos += i + 1
	return rest[:i], nil
}

// counted consumes a length field of width bytes and the string it counts.
func (s *scanner) counted(width int, signed bool, text bool) error {
	b, err := s.take(width, "a length field")
	if err != nil {
		return err
	}
	var n int64
	switch width {
	case 1:
		n = int64(b[0])
	case 4:
		n = int64(binary.LittleEndian.Uint32(b))
		if signed {
			n = int64(int32(binary.LittleEndian.Uint32(b)))
		}
	case 8:
		u := binary.LittleEndian.Uint64(b)
		if u > uint64(len(s.data)) {
			return s.truncated(fmt.Sprintf("a string of %d bytes", u))
		}
		n = int64(u)
	}
	if n < 0 || n > int64(len(s.data)-s.pos) {
		return s.truncated(fmt.Sprintf("a string of %d bytes", n))
	}
	str, _ := s.take(int(n), "a string")
	if text {
		return s.checkName(string(str))
	}
	return nil
}

// checkName refuses a string that could make STACK_GLOBAL reach a global gopickle resolves
// without the allow-list.
func (s *scanner) checkName(name string) error {
	if gopickleModules[name] {
		return s.fail(ErrUnsafe, s.opAt, fmt.Sprintf("%q", name), "the string names a module of globals that are not allowed "+
			"(torch.load(..., weights_only=True) refuses them too); nothing of this file was executed")
	}
	return nil
}

// op checks one opcode and its argument; stop is true at STOP.
func (s *scanner) op(op byte) (stop bool, err error) {
	switch op {
	case '.': // STOP
		return true, nil
	case '(': // MARK
		if s.depth++; s.depth > maxMarkDepth {
			return false, s.fail(ErrFormat, s.opAt, "", "pickle nested deeper than %d levels: not a state_dict", maxMarkDepth)
		}
	case 't', 'l', 'd', 'u', 'e', 0x90, 0x91, '1': // TUPLE, LIST, DICT, SETITEMS, APPENDS, ADDITEMS, FROZENSET, POP_MARK
		s.depth = max(s.depth-1, 0)
	case '0', '2', 'N', ')', ']', '}', 'a', 's', 'b', 'R', 'Q', 0x85, 0x86, 0x87, 0x88, 0x89, 0x8f, 0x93, 0x94:
		// POP, DUP, NONE, EMPTY_TUPLE/LIST/DICT, APPEND, SETITEM, BUILD, REDUCE, BINPERSID,
		// TUPLE1-3, NEWTRUE, NEWFALSE, EMPTY_SET, STACK_GLOBAL, MEMOIZE: no argument.
	case 'K', 'h', 'q', 0x80: // BININT1, BINGET, BINPUT, PROTO
		_, err = s.take(1, fmt.Sprintf("opcode %q", op))
	case 'M': // BININT2
		_, err = s.take(2, "a BININT2 opcode")
	case 'J', 'j', 'r': // BININT, LONG_BINGET, LONG_BINPUT
		_, err = s.take(4, fmt.Sprintf("opcode %q", op))
	case 'G', 0x95: // BINFLOAT, FRAME (frames only group opcodes; their length is checked as any other)
		var b []byte
		if b, err = s.take(8, fmt.Sprintf("opcode %q", op)); err == nil && op == 0x95 &&
			binary.LittleEndian.Uint64(b) > uint64(len(s.data)-s.pos) {
			err = s.truncated("a frame")
		}
	case 0x8a: // LONG1
		err = s.counted(1, false, false)
	case 0x8b: // LONG4
		err = s.counted(4, true, false)
	case 'C': // SHORT_BINBYTES
		err = s.counted(1, false, false)
	case 'U', 0x8c: // SHORT_BINSTRING, SHORT_BINUNICODE
		err = s.counted(1, false, true)
	case 'T': // BINSTRING
		err = s.counted(4, true, true)
	case 'B': // BINBYTES
		err = s.counted(4, false, false)
	case 'X': // BINUNICODE
		err = s.counted(4, false, true)
	case 0x8e, 0x96: // BINBYTES8, BYTEARRAY8
		err = s.counted(8, false, false)
	case 0x8d: // BINUNICODE8
		err = s.counted(8, false, true)
	case 'I', 'L', 'F', 'g', 'p': // INT, LONG, FLOAT, GET, PUT (text)
		_, err = s.line()
	case 'S', 'V': // STRING, UNICODE (text)
		var l []byte
		if l, err = s.line(); err == nil {
			err = s.checkName(string(bytes.Trim(l, "'\"")))
		}
	case 'c': // GLOBAL module\nname\n
		var module, name []byte
		if module, err = s.line(); err != nil {
			return false, err
		}
		if name, err = s.line(); err != nil {
			return false, err
		}
		if gopickleModules[string(module)] {
			err = s.fail(ErrUnsafe, s.opAt, string(module)+"."+string(name), "global not allowed: a state_dict names only "+
				"torch's tensor rebuild functions, storage types and collections.OrderedDict "+
				"(torch.load(..., weights_only=True) refuses it too); nothing of this file was executed")
		}
	default:
		err = s.fail(ErrUnsafe, s.opAt, fmt.Sprintf("opcode 0x%02x", op), "pickle opcode not allowed in a state_dict "+
			"(INST, OBJ, NEWOBJ, extensions, text persistent ids, out-of-band buffers and unknown opcodes are refused, "+
			"as by torch.load(..., weights_only=True)); nothing of this file was executed")
	}
	return false, err
}
