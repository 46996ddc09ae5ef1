package training

import (
	"fmt"
	"io"
)

// runLog is the logging part of a Trainer: it writes one line, formatted as fmt.Sprintf does,
// to the Env's Log. The parts that have something to say are handed it.
type runLog func(format string, args ...any)

// newRunLog returns the runLog writing to w; a nil w is silent.
func newRunLog(w io.Writer) runLog {
	if w == nil {
		return func(string, ...any) {}
	}
	return func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
}
