package nb

import (
	"fmt"
	"io"
	"os"

	"github.com/janpfeifer/gonb/gonbui"
	"github.com/janpfeifer/gonb/gonbui/protocol"
)

// Output receives the plain-text output of this package: what Check and CellTime print, and
// the text form of the displays when the program does not run in a GoNB cell. When nil (the
// default) it is os.Stdout.
var Output io.Writer

func output() io.Writer {
	if Output == nil {
		return os.Stdout
	}
	return Output
}

// InNotebook reports whether the program runs as a GoNB notebook cell (GoNB sets $GONB_PIPE),
// so rich output (HTML, SVG, PNG) reaches the notebook. In the lab process, it is whether the
// cell it serves is.
func InNotebook() bool { return cellIO.notebook() }

// cellIO is where rich output goes: the GoNB cell's pipe (gonbui), or, in the lab process
// while it serves a cell's request, that cell (serveRequest sets it).
var cellIO = struct {
	notebook func() bool
	send     func(*protocol.DisplayData)
}{
	notebook: func() bool { return gonbui.IsNotebook },
	send: func(d *protocol.DisplayData) {
		gonbui.SendData(d)
		// Wait until GoNB has received it, so that the display keeps its place relative to
		// what the cell prints next, and is not lost if the cell exits right after.
		gonbui.Sync()
	},
}

// DisplayHTML shows html in the notebook cell, with text as its plain-text alternative (kept
// in the saved notebook next to the HTML). Outside a notebook it writes text to Output.
func DisplayHTML(html, text string) {
	display(map[protocol.MIMEType]any{protocol.MIMETextHTML: html}, text)
}

// DisplaySVG shows an SVG document as image/svg+xml, which JupyterLab, nbconvert and GitHub
// render without scripts, with text as its plain-text alternative. Outside a notebook it
// writes text to Output.
func DisplaySVG(svg, text string) {
	display(map[protocol.MIMEType]any{protocol.MIMEImageSVG: svg}, text)
}

// DisplayPNG shows PNG bytes in the notebook cell, with text as its plain-text alternative.
// Outside a notebook it writes text to Output.
func DisplayPNG(png []byte, text string) {
	display(map[protocol.MIMEType]any{protocol.MIMEImagePNG: png}, text)
}

func display(data map[protocol.MIMEType]any, text string) {
	if !InNotebook() {
		if text != "" {
			fmt.Fprintln(output(), text)
		}
		return
	}
	if text != "" {
		data[protocol.MIMETextPlain] = text
	}
	cellIO.send(&protocol.DisplayData{Data: data})
}

// Sink is where a live view sends its charts. Update replaces the display called id by svg,
// with text as its plain-text alternative; the first Update of an id creates the display, in
// the cell's output where the cell is at that time. NotebookSink is the notebook's; tests
// record the updates.
type Sink interface {
	Update(id, svg, text string)
}

// NotebookSink updates displays of the GoNB cell in place (gonbui's display ids: Jupyter's
// update_display_data), as SVG images: no JavaScript, and the last update is what a saved
// notebook keeps.
type NotebookSink struct{}

// Update sends svg to the display id and waits until GoNB has it.
func (NotebookSink) Update(id, svg, text string) {
	cellIO.send(&protocol.DisplayData{
		Data:      map[protocol.MIMEType]any{protocol.MIMEImageSVG: svg, protocol.MIMETextPlain: text},
		DisplayID: id,
	})
}
