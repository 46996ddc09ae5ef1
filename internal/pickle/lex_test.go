package pickle

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The kinds a caller gives Options; failure is the error its Fail builds (errors.Is sees the kind).
var (
	errTruncated = errors.New("truncated")
	errLayout    = errors.New("layout")
	errUnsafe    = errors.New("unsafe")
)

// failure is a refusal as Options.Fail receives it.
type failure struct {
	kind          error
	offset        int64
	value, reason string
}

// failurePrefix is what the test's Fail puts first: the lexer's text follows it unchanged.
const failurePrefix = "pickle: test.pkl: "

func (f *failure) Error() string {
	return fmt.Sprintf("%s%v at byte %d (%s): %s", failurePrefix, f.kind, f.offset, f.value, f.reason)
}
func (f *failure) Unwrap() error { return f.kind }

// decodeTest decodes data with small bounds (MaxBlob 5000) and counts the allocations asked for.
func decodeTest(data []byte, edit func(*Options)) (any, *[]int, error) {
	var allocs []int
	o := &Options{Source: "test.pkl", Size: int64(len(data)), MaxBlob: 5000, ImageBytes: 3072,
		Alloc:     func(n int) []byte { allocs = append(allocs, n); return make([]byte, n) },
		Truncated: errTruncated, Layout: errLayout, Unsafe: errUnsafe,
		Fail: func(kind error, offset int64, value, reason string) error {
			return &failure{kind: kind, offset: offset, value: value, reason: reason}
		}}
	if edit != nil {
		edit(o)
	}
	v, err := Decode(bytes.NewReader(data), o)
	return v, &allocs, err
}

// p concatenates pickle pieces: strings, bytes, and integers written as little-endian uint32.
func p(parts ...any) []byte {
	var b []byte
	for _, x := range parts {
		switch v := x.(type) {
		case string:
			b = append(b, v...)
		case []byte:
			b = append(b, v...)
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, v)
		case uint64:
			b = binary.LittleEndian.AppendUint64(b, v)
		default:
			panic(fmt.Sprintf("p: %T", x))
		}
	}
	return b
}

// blob is a BINBYTES of n bytes (a "large string" from blobThreshold on).
func blob(n int) []byte { return p("B", uint32(n), strings.Repeat("x", n)) }

// TestLexerRefusals: every refusal of the lexer (and of the default globals), by name: its kind,
// the value and the reason's words, with nothing allocated beyond the bytes present.
func TestLexerRefusals(t *testing.T) {
	tooLong := strings.Repeat("a", maxPickleLine+1)
	for _, tc := range []struct {
		name   string
		data   []byte
		edit   func(*Options)
		kind   error
		value  string
		reason string
	}{
		// Truncation: the file ends inside an opcode or before STOP.
		{"empty file", nil, nil, errTruncated, "", "the pickle ends (after 0 bytes) inside the pickle (no STOP opcode)"},
		{"no STOP", p("\x80\x02K\x01"), nil, errTruncated, "", "inside the pickle (no STOP opcode); the file is incomplete: re-download it"},
		{"PROTO without its byte", p("\x80"), nil, errTruncated, "", "inside the PROTO opcode"},
		{"BININT1 without its byte", p("K"), nil, errTruncated, "", "inside opcode 'K'"},
		{"BININT2 cut", p("M\x01"), nil, errTruncated, "", "inside a BININT2 opcode"},
		{"BININT cut", p("J\x01\x02"), nil, errTruncated, "", "inside opcode 'J'"},
		{"BINFLOAT cut", p("G\x00\x00"), nil, errTruncated, "", "inside a BINFLOAT opcode"},
		{"FRAME cut", p("\x95\x01\x00"), nil, errTruncated, "", "inside a FRAME opcode"},
		{"LONG1 without its length", p("\x8a"), nil, errTruncated, "", "inside a LONG1 opcode"},
		{"LONG4 cut", p("\x8b\x01"), nil, errTruncated, "", "inside a LONG4 opcode"},
		{"LONG1 value cut", p("\x8a\x04\x01"), nil, errTruncated, "", "inside an integer"},
		{"short string without its length", p("\x8c"), nil, errTruncated, "", "inside a short string's length"},
		{"string without its length", p("X\x01"), nil, errTruncated, "", "inside a string's length"},
		{"short string cut", p("\x8c\x05ab"), nil, errTruncated, "", "inside a string of 5 bytes"},
		{"BINSTRING of negative length", p("T", uint32(0xffffffff)), nil, errTruncated, "", "inside a string of -1 bytes"},
		{"BINBYTES longer than the file", p("B", uint32(1<<31), "xy."), nil, errTruncated, "", "inside a string of 2147483648 bytes"},
		{"BINBYTES8 longer than the file", p("\x8e", uint64(1<<62), "."), nil, errTruncated, "", "inside a string"},
		{"large string cut", p("B", uint32(4096), "xyz"), nil, errTruncated, "", "inside a string of 4096 bytes"},
		{"GLOBAL cut", p("cnumpy\nndar"), nil, errTruncated, "", "inside a text argument"},
		// Opcodes outside plain data.
		{"PERSID", p("P1\n."), nil, errUnsafe, "0x50", "pickle opcode not allowed in a CIFAR pickle"},
		{"BINPERSID without PersistentLoad", p("K\x01Q."), nil, errUnsafe, "0x51", "pickle opcode not allowed"},
		{"INST", p("ios\nsystem\n."), nil, errUnsafe, "0x69", "INST/OBJ/NEWOBJ"},
		{"OBJ", p("(o."), nil, errUnsafe, "0x6f", "pickle opcode not allowed"},
		{"NEWOBJ", p("\x81."), nil, errUnsafe, "0x81", "pickle opcode not allowed"},
		{"EXT1", p("\x82\x01."), nil, errUnsafe, "0x82", "extensions"},
		{"EXT2", p("\x83\x01\x00."), nil, errUnsafe, "0x83", "pickle opcode not allowed"},
		{"EXT4", p("\x84\x01\x00\x00\x00."), nil, errUnsafe, "0x84", "pickle opcode not allowed"},
		{"NEWOBJ_EX", p("\x92."), nil, errUnsafe, "0x92", "pickle opcode not allowed"},
		{"BYTEARRAY8", p("\x96", uint64(1), "x."), nil, errUnsafe, "0x96", "pickle opcode not allowed"},
		{"NEXT_BUFFER", p("\x97."), nil, errUnsafe, "0x97", "out-of-band buffers"},
		{"READONLY_BUFFER", p("\x98."), nil, errUnsafe, "0x98", "pickle opcode not allowed"},
		{"unknown opcode", p("\xff."), nil, errUnsafe, "0xff", "unknown opcodes are refused); nothing of this file was executed"},
		{"protocol 5", p("\x80\x05K\x01."), nil, errUnsafe, "5", "pickle protocol 5 is not supported"},
		// Globals.
		{"collections.OrderedDict", p("ccollections\nOrderedDict\n."), nil, errUnsafe, "collections.OrderedDict", "global not allowed: a CIFAR pickle names only numpy's"},
		{"__builtin__.object", p("c__builtin__\nobject\n."), nil, errUnsafe, "__builtin__.object", "global not allowed"},
		{"copy_reg._reconstructor", p("ccopy_reg\n_reconstructor\n."), nil, errUnsafe, "copy_reg._reconstructor", "global not allowed"},
		{"os.system", p("cos\nsystem\n."), nil, errUnsafe, "os.system", "global not allowed"},
		{"posix.system via STACK_GLOBAL", p("\x8c\x05posix\x8c\x06system\x93."), nil, errUnsafe, "posix.system", "global not allowed"},
		{"allowed list named", p("cos\nsystem\n."), func(o *Options) { o.Allowed = "numpy only" }, errUnsafe, "os.system", "global not allowed"},
		{"string naming copy_reg", p("\x8c\x08copy_reg."), nil, errUnsafe, `"copy_reg"`, "the string names a module of globals that are not allowed"},
		{"BINUNICODE naming __builtin__", p("X", uint32(11), "__builtin__."), nil, errUnsafe, `"__builtin__"`, "could only serve STACK_GLOBAL"},
		{"protocol-0 string naming collections", p("S'collections'\n."), nil, errUnsafe, `"collections"`, "the string names a module"},
		// Layout and bounds.
		{"LONG1 of 0 bytes", p("\x8a\x00."), nil, errLayout, "0", "integer of 0 bytes: a CIFAR pickle holds no such integer"},
		{"LONG1 of 9 bytes", p("\x8a\x09", strings.Repeat("\x01", 9), "."), nil, errLayout, "9", "integer of 9 bytes"},
		{"LONG4 of -1 bytes", p("\x8b", uint32(0xffffffff), "."), nil, errLayout, "-1", "integer of -1 bytes"},
		{"text argument too long", p("c", tooLong, "\n"), nil, errLayout, "", fmt.Sprintf("text argument longer than %d bytes", maxPickleLine)},
		{"more opcodes than MaxOps", p("K\x01K\x02K\x03."), func(o *Options) { o.MaxOps = 3 }, errLayout, "", "more than 3 pickle opcodes"},
		{"large string without MaxBlob", blob(blobThreshold), func(o *Options) { o.MaxBlob = 0 }, errLayout, "4096 bytes", "a string this large"},
		{"second large string", p(blob(4096), blob(4096), "."), nil, errLayout, "4096 bytes", "a second large string"},
		{"string over MaxBlob", p(blob(5001), "."), nil, errLayout, "5001 bytes", "string larger than 5000 bytes"},
		{"bytes after STOP", p("K\x01.xy"), nil, errLayout, "", "2 bytes after the pickle's STOP opcode"},
		{"malformed: POP of an empty stack", p("0."), nil, errLayout, "", "malformed pickle"},
		{"what names the kind", p("K\x01.x"), func(o *Options) { o.What = "a torch.save pickle" }, errLayout, "", "1 bytes after the pickle's STOP opcode: not a torch.save pickle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, allocs, err := decodeTest(tc.data, tc.edit)
			require.ErrorIs(t, err, tc.kind)
			var f *failure
			require.ErrorAs(t, err, &f)
			require.True(t, strings.HasPrefix(err.Error(), failurePrefix), err.Error())
			require.Equal(t, tc.value, f.value)
			require.Contains(t, f.reason, tc.reason)
			require.GreaterOrEqual(t, f.offset, int64(0))
			require.LessOrEqual(t, f.offset, int64(len(tc.data)))
			for _, n := range *allocs {
				require.LessOrEqual(t, n, len(tc.data), "an allocation beyond the bytes present")
			}
		})
	}
}

// TestLexerBounds: every bound accepts its limit and refuses one more.
func TestLexerBounds(t *testing.T) {
	digits := func(n int) []byte { return p("I", strings.Repeat("0", n-1), "\n.") } // n bytes with the newline
	for _, tc := range []struct {
		name   string
		data   []byte
		edit   func(*Options)
		ok     bool
		allocs []int
	}{
		{"MaxOps reached", p("K\x01K\x02."), func(o *Options) { o.MaxOps = 3 }, true, nil},
		{"MaxOps exceeded", p("K\x01K\x02."), func(o *Options) { o.MaxOps = 2 }, false, nil},
		{"text argument of maxPickleLine bytes", digits(maxPickleLine), nil, true, nil},
		{"text argument of maxPickleLine+1 bytes", digits(maxPickleLine + 2), nil, false, nil},
		{"string below blobThreshold: not the pixel data", p(blob(blobThreshold-1), "."), nil, true, nil},
		{"string at blobThreshold: read into Alloc's buffer", p(blob(blobThreshold), "."), nil, true, []int{blobThreshold}},
		{"string of MaxBlob bytes", p(blob(5000), "."), nil, true, []int{5000}},
		{"string of MaxBlob+1 bytes", p(blob(5001), "."), nil, false, nil},
		{"protocol 4", p("\x80\x04\x95", uint64(3), "K\x01."), nil, true, nil},
		{"protocol 5", p("\x80\x05K\x01."), nil, false, nil},
		{"LONG1 of 8 bytes", p("\x8a\x08", strings.Repeat("\x01", 8), "."), nil, true, nil},
		{"LONG1 of 9 bytes", p("\x8a\x09", strings.Repeat("\x01", 9), "."), nil, false, nil},
		{"OrderedDict allowed by the option", p("ccollections\nOrderedDict\n)R."), func(o *Options) { o.OrderedDict = true }, true, nil},
		{"OrderedDict refused without it", p("ccollections\nOrderedDict\n)R."), nil, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, allocs, err := decodeTest(tc.data, tc.edit)
			if !tc.ok {
				require.Error(t, err)
				require.Empty(t, *allocs, "nothing allocated for a refused value")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.allocs, *allocs)
		})
	}
}

// FuzzDecode feeds arbitrary bytes to Decode with the default (NumPy) globals: it returns a
// value or an error of one of the three kinds, never panics, and never asks for a buffer larger
// than the input.
func FuzzDecode(f *testing.F) {
	for _, seed := range [][]byte{p("\x80\x02K\x01."), p(blob(4096), "."), p("cos\nsystem\n."), p("\x80\x04\x95", uint64(3), "K\x01.")} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, allocs, err := decodeTest(data, nil)
		if err != nil && !errors.Is(err, errTruncated) && !errors.Is(err, errLayout) && !errors.Is(err, errUnsafe) {
			t.Fatalf("an error of no kind: %v", err)
		}
		for _, n := range *allocs {
			if n > len(data) {
				t.Fatalf("allocation of %d bytes from %d", n, len(data))
			}
		}
	})
}
