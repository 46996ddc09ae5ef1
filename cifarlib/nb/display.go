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

// DisplaySVG shows an SVG document as image/svg+xml, with text as its plain-text alternative.
// JupyterLab renders SVG only in a trusted notebook: an untrusted one shows the text; use
// DisplayImage, which adds a PNG. Outside a notebook it writes text to Output.
func DisplaySVG(svg, text string) {
	display(map[protocol.MIMEType]any{protocol.MIMEImageSVG: svg}, text)
}

// DisplayImage shows img in the notebook cell as one output with its SVG, its PNG (at its CSS
// size) and its Text, of which each viewer shows the richest it trusts (see Image). Outside a
// notebook it writes img.Text to Output.
func DisplayImage(img *Image) {
	data, metadata := img.bundle()
	displayWith(data, metadata, img.Text)
}

// DisplayPNG shows PNG bytes in the notebook cell, with text as its plain-text alternative.
// Outside a notebook it writes text to Output.
func DisplayPNG(png []byte, text string) {
	display(map[protocol.MIMEType]any{protocol.MIMEImagePNG: png}, text)
}

func display(data map[protocol.MIMEType]any, text string) { displayWith(data, nil, text) }

func displayWith(data map[protocol.MIMEType]any, metadata map[string]any, text string) {
	if !InNotebook() {
		if text != "" {
			fmt.Fprintln(output(), text)
		}
		return
	}
	if text != "" {
		data[protocol.MIMETextPlain] = text
	}
	cellIO.send(&protocol.DisplayData{Data: data, Metadata: metadata})
}
