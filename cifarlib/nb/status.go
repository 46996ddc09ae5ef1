package nb

import (
	"fmt"
	"os"

	"github.com/cifarlab/cifarlab/cifarlib/internal/labproc"
	"github.com/cifarlab/cifarlab/cifarlib/training"

	"github.com/janpfeifer/gonb/gonbui"
	"github.com/janpfeifer/gonb/gonbui/protocol"
)

// cellStatus returns the status line of the work of run name in a notebook cell: one line of
// the cell's output, replaced in place (a display of its own) as the work's events come
// (training.Status: what it does, and how long it has taken), whether the work runs in this
// program or in the lab process, whose events come over its socket. Outside a notebook, nil:
// the CLI and tests have their own lines.
func cellStatus(run string) *training.Status {
	if !InNotebook() {
		return nil
	}
	id := "cifarlab-status-" + gonbui.UniqueID()
	return training.NewStatus(fmt.Sprintf("run %q: ", run), func(line string, _ bool) {
		cellIO.send(&protocol.DisplayData{Data: map[protocol.MIMEType]any{protocol.MIMETextPlain: line}, DisplayID: id})
	})
}

// statusEvent sends e to st, if any.
func statusEvent(st *training.Status, e training.Event) {
	if st != nil {
		st.Event(e)
	}
}

// closeStatus closes st, if any, after an end with err.
func closeStatus(st *training.Status, err error) {
	if st != nil {
		st.Close(err)
	}
}

// withStatus returns onEvent, which also sends each event to st (when there is one).
func withStatus(st *training.Status, onEvent func(training.Event)) func(training.Event) {
	if st == nil {
		return onEvent
	}
	if onEvent == nil {
		return st.Event
	}
	return func(e training.Event) {
		st.Event(e)
		onEvent(e)
	}
}

// toLabProcess says, on st, that the cell's work goes to the kernel's lab process of client,
// which starts first when it is not running.
func toLabProcess(st *training.Status, client *labproc.Client) {
	what := "sending the work to the lab process"
	if _, err := os.Stat(labproc.SocketPath(client.Folder)); err != nil {
		what = "starting the lab process (the kernel's first cell to train or evaluate)"
	}
	statusEvent(st, training.Event{Kind: training.EventPhase, Text: what})
}

// eventSender returns the lab process's training.Config.OnEvent for a request: each event goes
// to the cell over out (KindEvent), where relayTo shows it.
func eventSender(out *labproc.Stream) func(training.Event) {
	return func(e training.Event) {
		if b, err := encode(e); err == nil {
			_ = out.Send(&labproc.Message{Kind: labproc.KindEvent, Payload: b})
		}
	}
}
