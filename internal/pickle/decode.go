// Package pickle decodes the Python pickles of torchvision's CIFAR layout without executing
// anything: a lexer between the file and gopickle's unpickler refuses every opcode and global a
// CIFAR pickle does not need and bounds every allocation by the bytes present, and the only
// globals are Go stand-ins for NumPy's uint8 array reconstructors. It is internal plumbing
// (stage 1, see internal/layers): the data package reads CIFAR batches and meta files with it
// and reports its failures as its own *PickleError through Options.Fail.
package pickle

import (
	"crypto/rand"
	"fmt"
	"io"

	"github.com/nlpodyssey/gopickle/pickle"
)

// Options describe one pickle to decode and how its failures are reported.
type Options struct {
	// Source names the file in messages; Size is its length in bytes.
	Source string
	Size   int64
	// MaxBlob bounds the one large string (the pixel array's data); ImageBytes is the width of
	// the array's rows ([N, ImageBytes]).
	MaxBlob    int64
	ImageBytes int
	// Alloc provides the buffer the pixel data is read into.
	Alloc func(n int) []byte
	// Truncated, Layout and Unsafe are the kinds of failure passed to Fail: the file ends
	// early; it is not a CIFAR pickle; it names a global or opcode that is not allowed.
	Truncated, Layout, Unsafe error
	// Fail builds the error of a failure of kind at offset (the opcode's), with the value
	// concerned (may be "") and the reason.
	Fail func(kind error, offset int64, value, reason string) error
}

// pickleDecoder decodes one pickle through gopickle with the lexer and the numpy globals.
type pickleDecoder struct {
	o     *Options
	lex   *pickleLexer
	token [16]byte
}

// Decode unpickles r as o describes and returns the top-level value. gopickle's panics on
// malformed input are returned as errors.
func Decode(r io.Reader, o *Options) (value any, err error) {
	d := &pickleDecoder{o: o}
	if _, err := rand.Read(d.token[:]); err != nil {
		return nil, fmt.Errorf("cifarlib: %s: %w", o.Source, err)
	}
	d.lex = newPickleLexer(r, o, d.token)
	u := pickle.NewUnpickler(d.lex)
	u.FindClass = d.findClass
	defer func() {
		if p := recover(); p != nil {
			value = nil
			err = d.lex.fail(o.Layout, "", "malformed pickle (the unpickler failed: %v)", p)
		}
	}()
	v, err := u.Load()
	if d.lex.err != nil {
		return nil, d.lex.err
	}
	if err != nil {
		return nil, d.lex.fail(o.Layout, "", "malformed pickle: %v", err)
	}
	if err := d.lex.finish(); err != nil {
		return nil, err
	}
	return v, nil
}
