package labproc

import (
	"encoding/gob"
	"fmt"
	"io"
	"sync"

	"github.com/janpfeifer/gonb/gonbui/protocol"
)

// Request is what a cell asks the lab process: one per connection.
type Request struct {
	// Op names the request (nb's "fit", "load", ...); Payload is its arguments, in nb's encoding.
	Op      string
	Payload []byte
	// Fingerprint is the cell's library code (Fingerprint), Backend what selects its backend
	// (BackendKey): a lab process of another one refuses the request and ends.
	Fingerprint, Backend string
}

// Kind is the kind of a Message.
type Kind string

func init() {
	// A display's Metadata holds maps of its own, e.g. {"image/png": {"width": 680}}: gob sends
	// a value in an interface only of a registered type.
	gob.Register(map[string]any{})
}

// The kinds of messages: the server sends Text, Display and Event while it serves a request, then one
// Result, or one Refused instead of all of them; the client may send one Cancel.
const (
	KindText    Kind = "text"    // Text: what the request printed, for the cell's stdout
	KindDisplay Kind = "display" // Display: a rich display, new or the update of its DisplayID
	KindEvent   Kind = "event"   // Payload: what the request starts doing (nb's encoding of a training.Event)
	KindResult  Kind = "result"  // Payload, or Err: the request's end
	KindRefused Kind = "refused" // Text: why this lab process cannot serve the cell; it ends
	KindCancel  Kind = "cancel"  // client to server: the cell was interrupted
	// KindStopping, server to client after a Cancel: Text and Payload say what the lab process
	// does with the request it was told to cancel (a Fit finishes its step and saves), which
	// the cell says when it cannot wait for the result (Client.Grace).
	KindStopping Kind = "stopping"
)

// Message is one message on a request's connection.
type Message struct {
	Kind    Kind
	Text    string
	Display *protocol.DisplayData
	Payload []byte
	Err     *Error
}

// Error is a request's error as it travels: its text, the names of the sentinel errors that
// errors.Is finds in it (nb's table), and nb's encoding of a typed error the cell needs whole
// (an interrupted run).
type Error struct {
	Text   string
	Kinds  []string
	Detail []byte
}

// Error implements error.
func (e *Error) Error() string { return e.Text }

// Stream sends a request's messages to its cell; it is safe for concurrent use (a training's
// log and its live charts come from different goroutines).
type Stream struct {
	mu  sync.Mutex
	enc *gob.Encoder
	err error
}

// NewStream returns a stream writing to w.
func NewStream(w io.Writer) *Stream { return &Stream{enc: gob.NewEncoder(w)} }

// Send sends m. After a failed send (the cell is gone) it sends nothing more and returns
// that error.
func (s *Stream) Send(m *Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		if err := s.enc.Encode(m); err != nil {
			s.err = fmt.Errorf("labproc: sending to the cell: %w", err)
		}
	}
	return s.err
}

// Write sends p as the cell's output (KindText): a Stream is the io.Writer of a request's
// output. It never fails, so that a cell gone does not stop training: the run folder keeps
// the result.
func (s *Stream) Write(p []byte) (int, error) {
	_ = s.Send(&Message{Kind: KindText, Text: string(p)})
	return len(p), nil
}

// Display sends a rich display (KindDisplay).
func (s *Stream) Display(d *protocol.DisplayData) {
	_ = s.Send(&Message{Kind: KindDisplay, Display: d})
}
