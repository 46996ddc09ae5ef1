// Package pickle decodes Python pickles without executing anything: a lexer between the file
// and gopickle's unpickler refuses every opcode and global the kind of pickle does not need and
// bounds every allocation by the bytes present, and the only globals are Go stand-ins. By default
// those are NumPy's uint8 array reconstructors, for the pickles of torchvision's CIFAR layout;
// Options.Globals and PersistentLoad give another kind its own (internal/torchfile: torch.save's
// tensor rebuild functions and storages). It is internal plumbing (stage 1, see internal/layers):
// the data package reads CIFAR batches and meta files with it and reports its failures as its own
// *PickleError through Options.Fail.
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

	// What names the kind of pickle in messages ("a CIFAR pickle" when empty), Fix says what to
	// do with an incomplete file, Allowed lists the globals it may name.
	What, Fix, Allowed string
	// MaxOps bounds the number of opcodes (default 2^21, a CIFAR-100 training file's tenfold).
	MaxOps int
	// Globals, when set, resolves every global the pickle names instead of the NumPy stand-ins:
	// it returns the Go value standing for module.name, or refuses it (with Refuse).
	Globals func(module, name string) (any, error)
	// PersistentLoad, when set, allows persistent ids (BINPERSID: torch.save's storages) and
	// resolves them.
	PersistentLoad func(pid any) (any, error)
	// OrderedDict allows collections.OrderedDict, which gopickle resolves itself to a Go ordered
	// map (a state_dict is one).
	OrderedDict bool
	// Refuse is set by Decode for Globals, PersistentLoad and the values they return: it records
	// and returns the failure of kind at the opcode being decoded (through Fail).
	Refuse func(kind error, value, reason string) error
}

// what is the kind of pickle in messages.
func (o *Options) what() string {
	if o.What == "" {
		return "a CIFAR pickle"
	}
	return o.What
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
	o.Refuse = func(kind error, value, reason string) error { return d.lex.fail(kind, value, "%s", reason) }
	u := pickle.NewUnpickler(d.lex)
	u.FindClass = d.findClass
	if o.Globals != nil {
		u.FindClass = o.Globals
	}
	u.PersistentLoad = o.PersistentLoad
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
