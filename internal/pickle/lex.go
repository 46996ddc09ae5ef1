package pickle

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The pickle lexer sits between the file and gopickle's unpickler. It does not build any
// value (gopickle does); it walks the opcode stream as pickletools.genops does and, before
// gopickle sees an opcode:
//   - refuses opcodes a CIFAR pickle never needs and that reach outside plain data
//     (PERSID, INST, OBJ, NEWOBJ, EXT*, out-of-band buffers, protocol 5); BINPERSID only
//     when Options.PersistentLoad resolves persistent ids;
//   - bounds every length field by the bytes left in the file, so that gopickle never
//     allocates more than the file holds (it allocates before it reads), and bounds the
//     number of opcodes;
//   - refuses the three globals gopickle resolves itself before calling FindClass
//     (collections.OrderedDict, unless Options.OrderedDict, __builtin__.object,
//     copy_reg._reconstructor);
//   - reads the one large string (the pixel array's data) straight into a buffer it asks
//     the caller for, and hands gopickle a 16-byte random token in its place. This is how
//     decoding needs no extra copy of a batch: gopickle would read the string into a buffer
//     and (for Python 2's BINSTRING) convert it to a Go string, two copies.
//   - drops FRAME opcodes (protocol 4), which only group opcodes for buffering, so that
//     replacing the large string never leaves a frame length wrong.

const (
	// maxPickleOps bounds the opcodes of one file: a 50,000-record CIFAR-100 pickle has about
	// 250,000 (a filename and two labels per record).
	maxPickleOps = 1 << 21
	// maxPickleLine bounds the text argument of protocol-0 opcodes (GLOBAL's module and name).
	maxPickleLine = 256
	// blobThreshold is the size from which a string or bytes value is taken as the pixel data.
	blobThreshold = 4096
)

// gopickleBuiltinModules are the modules of the globals gopickle resolves without calling
// FindClass; a string equal to one of them could feed STACK_GLOBAL, so it is refused.
var gopickleBuiltinModules = map[string]bool{"collections": true, "__builtin__": true, "copy_reg": true}

// pickleLexer is an io.Reader and io.ByteReader of the checked (and rewritten) opcode stream.
type pickleLexer struct {
	src    *bufio.Reader
	o      *Options
	size   int64 // total bytes of the pickle
	pos    int64 // bytes consumed from src
	opAt   int64 // offset of the opcode being decoded
	ops    int
	out    []byte // bytes of the current opcode for gopickle
	outPos int
	err    error // sticky error (Options.Fail's)
	done   bool  // STOP was passed on

	token [16]byte
	alloc func(n int) []byte
	blob  []byte
	blobN int // number of large strings seen
}

func newPickleLexer(r io.Reader, o *Options, token [16]byte) *pickleLexer {
	return &pickleLexer{src: bufio.NewReaderSize(r, 64<<10), o: o, size: o.Size, token: token, alloc: o.Alloc}
}

// fail records and returns a sticky error at the current opcode. The bytes of the refused
// opcode are withheld: gopickle gets the error instead of them (it would allocate by a length
// field before reading).
func (l *pickleLexer) fail(kind error, value, format string, args ...any) error {
	l.out, l.outPos = l.out[:0], 0
	if l.err == nil {
		l.err = l.o.Fail(kind, l.opAt, value, fmt.Sprintf(format, args...))
	}
	return l.err
}

// truncated reports that the file ends inside the current opcode.
func (l *pickleLexer) truncated(what string) error {
	return l.fail(l.o.Truncated, "", "the pickle ends (after %d bytes) inside %s; the file is incomplete: "+
		"%s", l.size, what, l.fix())
}

// fix says what to do with an incomplete file.
func (l *pickleLexer) fix() string {
	if l.o.Fix == "" {
		return "re-download it (or run `cifarlab download --format python`)"
	}
	return l.o.Fix
}

// builtinModule says whether mod is the module of a global gopickle resolves itself that the
// options do not allow.
func (l *pickleLexer) builtinModule(mod string) bool {
	return gopickleBuiltinModules[mod] && !(l.o.OrderedDict && mod == "collections")
}

// fill lexes opcodes until output is pending; it returns the lexer's error, or io.EOF after
// the last opcode.
func (l *pickleLexer) fill() error {
	for l.outPos == len(l.out) {
		if l.err != nil {
			return l.err
		}
		if l.done {
			return io.EOF
		}
		l.next()
	}
	return nil
}

// Read implements io.Reader.
func (l *pickleLexer) Read(p []byte) (int, error) {
	if err := l.fill(); err != nil {
		return 0, err
	}
	n := copy(p, l.out[l.outPos:])
	l.outPos += n
	return n, nil
}

// ReadByte implements io.ByteReader.
func (l *pickleLexer) ReadByte() (byte, error) {
	if err := l.fill(); err != nil {
		return 0, err
	}
	b := l.out[l.outPos]
	l.outPos++
	return b, nil
}

// readN reads exactly n bytes of the source, appending them to out when keep is set.
func (l *pickleLexer) readN(n int64, what string) ([]byte, error) {
	if n < 0 || n > l.size-l.pos {
		return nil, l.truncated(what)
	}
	start := len(l.out)
	l.out = append(l.out, make([]byte, n)...)
	if _, err := io.ReadFull(l.src, l.out[start:]); err != nil {
		return nil, l.readError(err, what)
	}
	l.pos += n
	return l.out[start:], nil
}

func (l *pickleLexer) readError(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return l.truncated(what)
	}
	return l.fail(l.o.Truncated, "", "reading %s: %v", what, err)
}

// next lexes one opcode into out.
func (l *pickleLexer) next() {
	l.out, l.outPos = l.out[:0], 0
	maxOps := l.o.MaxOps
	if maxOps == 0 {
		maxOps = maxPickleOps
	}
	if l.ops++; l.ops > maxOps {
		l.fail(l.o.Layout, "", "more than %d pickle opcodes: not %s", maxOps, l.o.what())
		return
	}
	l.opAt = l.pos
	op, err := l.src.ReadByte()
	if err != nil {
		l.readError(err, "the pickle (no STOP opcode)")
		return
	}
	l.pos++
	l.out = append(l.out, op)
	l.argument(op)
}

// argument lexes the argument of the opcode op into out (most have none, or a fixed number of
// bytes), refusing an opcode or argument the pickle may not use.
func (l *pickleLexer) argument(op byte) {
	switch op {
	case '.': // STOP
		l.done = true
	case '(', '0', '1', '2', 'N', 'R', 'a', 'b', 'd', '}', 'e', 'l', ']', 's', 't', ')', 'u',
		0x85, 0x86, 0x87, 0x88, 0x89, 0x8f, 0x90, 0x91, 0x93, 0x94:
		// No argument.
	case 'Q': // BINPERSID: resolved by Options.PersistentLoad, refused without it.
		if l.o.PersistentLoad == nil {
			l.refuseOpcode(op)
		}
	case 0x80: // PROTO
		if b, err := l.readN(1, "the PROTO opcode"); err == nil && b[0] > 4 {
			l.fail(l.o.Unsafe, fmt.Sprint(b[0]), "pickle protocol %d is not supported: the official files use "+
				"protocol 2; re-save with pickle protocol 4 or lower", b[0])
		}
	case 'K', 'h', 'q': // BININT1, BINGET, BINPUT
		_, _ = l.readN(1, fmt.Sprintf("opcode %q", op))
	case 'M': // BININT2
		_, _ = l.readN(2, "a BININT2 opcode")
	case 'J', 'j', 'r': // BININT, LONG_BINGET, LONG_BINPUT
		_, _ = l.readN(4, fmt.Sprintf("opcode %q", op))
	case 'G': // BINFLOAT
		_, _ = l.readN(8, "a BINFLOAT opcode")
	case 0x95: // FRAME: only groups opcodes for buffered reading; dropped (see above).
		if _, err := l.readN(8, "a FRAME opcode"); err == nil {
			l.out = l.out[:0]
		}
	case 0x8a, 0x8b: // LONG1, LONG4
		l.long(op)
	case 'U', 'C', 0x8c, 'T', 'B', 'X', 0x8d, 0x8e:
		l.binString(op)
	case 'I', 'L', 'F', 'S', 'V', 'g', 'p': // protocol 0 text arguments
		if line, err := l.line(); err == nil && (op == 'S' || op == 'V') {
			l.checkString(string(bytes.Trim(line[:len(line)-1], "'\"")))
		}
	case 'c': // GLOBAL module\nname\n
		l.global()
	default:
		l.refuseOpcode(op)
	}
}

// binString lexes a binary string opcode's length (1, 4 or 8 bytes) and string.
func (l *pickleLexer) binString(op byte) {
	switch op {
	case 'U', 'C', 0x8c: // SHORT_BINSTRING, SHORT_BINBYTES, SHORT_BINUNICODE
		if b, err := l.readN(1, "a short string's length"); err == nil {
			l.str(op, int64(b[0]), 1)
		}
	case 'T', 'B', 'X': // BINSTRING, BINBYTES, BINUNICODE
		if b, err := l.readN(4, "a string's length"); err == nil {
			n := int64(binary.LittleEndian.Uint32(b))
			if op == 'T' {
				n = int64(int32(binary.LittleEndian.Uint32(b)))
			}
			l.str(op, n, 4)
		}
	case 0x8d, 0x8e: // BINUNICODE8, BINBYTES8
		if b, err := l.readN(8, "a string's length"); err == nil {
			n := binary.LittleEndian.Uint64(b)
			if n > uint64(l.size) {
				l.truncated("a string")
				return
			}
			l.str(op, int64(n), 8)
		}
	}
}

// global lexes GLOBAL's module and name lines, refusing a global of a builtin module.
func (l *pickleLexer) global() {
	module, err := l.line()
	if err != nil {
		return
	}
	name, err := l.line()
	if err != nil {
		return
	}
	mod := string(module[:len(module)-1])
	if l.builtinModule(mod) {
		allowed := l.o.Allowed
		if allowed == "" {
			allowed = "numpy's array and dtype reconstructors"
		}
		l.fail(l.o.Unsafe, mod+"."+string(name[:len(name)-1]), "global not allowed: %s names only %s; "+
			"nothing of this file was executed", l.o.what(), allowed)
	}
}

// refuseOpcode refuses an opcode the pickle may not use.
func (l *pickleLexer) refuseOpcode(op byte) {
	l.fail(l.o.Unsafe, fmt.Sprintf("0x%02x", op), "pickle opcode not allowed in %s "+
		"(persistent ids, extensions, INST/OBJ/NEWOBJ, out-of-band buffers and unknown opcodes are refused); "+
		"nothing of this file was executed", l.o.what())
}

// line reads a newline-terminated argument of at most maxPickleLine bytes into out.
func (l *pickleLexer) line() ([]byte, error) {
	start := len(l.out)
	for {
		b, err := l.src.ReadByte()
		if err != nil {
			return nil, l.readError(err, "a text argument")
		}
		l.pos++
		l.out = append(l.out, b)
		if b == '\n' {
			return l.out[start:], nil
		}
		if len(l.out)-start > maxPickleLine {
			return nil, l.fail(l.o.Layout, "", "text argument longer than %d bytes: not %s", maxPickleLine, l.o.what())
		}
	}
}

// long checks LONG1/LONG4: CIFAR pickles need no integer wider than 8 bytes.
func (l *pickleLexer) long(op byte) {
	var n int64
	if op == 0x8a {
		b, err := l.readN(1, "a LONG1 opcode")
		if err != nil {
			return
		}
		n = int64(b[0])
	} else {
		b, err := l.readN(4, "a LONG4 opcode")
		if err != nil {
			return
		}
		n = int64(int32(binary.LittleEndian.Uint32(b)))
	}
	if n < 1 || n > 8 {
		l.fail(l.o.Layout, fmt.Sprint(n), "integer of %d bytes: %s holds no such integer", n, l.o.what())
		return
	}
	_, _ = l.readN(n, "an integer")
}

// str handles a counted string whose length field (lenBytes wide) was read: a small one is
// passed on as it is, the large one (the pixel data) is read into the caller's buffer and
// replaced by the token.
func (l *pickleLexer) str(op byte, n int64, lenBytes int) {
	if n < 0 || n > l.size-l.pos {
		l.truncated(fmt.Sprintf("a string of %d bytes", n))
		return
	}
	if n < blobThreshold {
		s, err := l.readN(n, "a string")
		if err == nil && op != 'C' && op != 'B' && op != 0x8e {
			l.checkString(string(s))
		}
		return
	}
	if l.o.MaxBlob == 0 {
		l.fail(l.o.Layout, fmt.Sprintf("%d bytes", n), "a string this large: not %s", l.o.what())
		return
	}
	if l.blobN++; l.blobN > 1 {
		l.fail(l.o.Layout, fmt.Sprintf("%d bytes", n), "a second large string: a CIFAR pickle has one, the pixel array's data")
		return
	}
	if n > l.o.MaxBlob {
		l.fail(l.o.Layout, fmt.Sprintf("%d bytes", n), "string larger than %d bytes (100,000 images): not a CIFAR batch", l.o.MaxBlob)
		return
	}
	l.blob = l.alloc(int(n))
	if _, err := io.ReadFull(l.src, l.blob); err != nil {
		l.readError(err, "the pixel data")
		return
	}
	l.pos += n
	// SHORT_BINBYTES with the token instead of the opcode just read.
	l.out = append(l.out[:0], 'C', byte(len(l.token)))
	l.out = append(l.out, l.token[:]...)
}

// checkString refuses a string that could name one of gopickle's built-in globals.
func (l *pickleLexer) checkString(s string) {
	if l.builtinModule(s) {
		l.fail(l.o.Unsafe, fmt.Sprintf("%q", s), "the string names a module of globals that are not allowed "+
			"(it could only serve STACK_GLOBAL); nothing of this file was executed")
	}
}

// finish checks that the pickle ended at STOP with nothing after it.
func (l *pickleLexer) finish() error {
	if l.err != nil {
		return l.err
	}
	if l.pos != l.size {
		l.opAt = l.pos
		return l.fail(l.o.Layout, "", "%d bytes after the pickle's STOP opcode: not %s", l.size-l.pos, l.o.what())
	}
	return nil
}
