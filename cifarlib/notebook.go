package cifarlib

import (
	"fmt"
	"io"
	"os"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/gobackend"
	"github.com/janpfeifer/gonb/gonbui"
	"github.com/janpfeifer/gonb/gonbui/protocol"
)

// NotebookArch returns the architecture the notebooks train on backend: the small CNN (ArchCNN)
// on XLA backends (the CPU plugin or CUDA), and the linear model (ArchLinear) on the pure-Go
// backend, whose convolutions are too slow for a notebook that must run in a couple of minutes on
// a laptop (about 0.26 s per CNN training step at batch 32 on 2 cores even with LayerOpsMatmul,
// against a few milliseconds for the linear model). The head, the labels and the guards behave the same on every
// architecture; a nil backend counts as the pure-Go one.
func NotebookArch(backend compute.Backend) string {
	if backend == nil || backend.String() == gobackend.BackendName {
		return ArchLinear
	}
	return ArchCNN
}

// NotebookOutput receives the plain-text form of the Display* helpers when the program does
// not run inside a GoNB notebook cell (a test, a terminal). When nil (the default) they write
// to os.Stdout.
var NotebookOutput io.Writer

// InNotebook reports whether the program runs as a GoNB notebook cell (GoNB sets $GONB_PIPE),
// so rich output (HTML, SVG, PNG) reaches the notebook.
func InNotebook() bool { return gonbui.IsNotebook }

// DisplayHTML shows html in the notebook cell, with text as its plain-text alternative (kept
// in the saved notebook next to the HTML, and what text-only viewers show). Outside a notebook
// it writes text, followed by a newline, to NotebookOutput.
func DisplayHTML(html, text string) {
	display(map[protocol.MIMEType]any{protocol.MIMETextHTML: html}, text)
}

// DisplaySVG shows an SVG image (an <svg> document, as the *SVG helpers of this package
// return) in the notebook cell as image/svg+xml, which JupyterLab, nbconvert and GitHub render
// without scripts or network access, with text as its plain-text alternative. Outside a
// notebook it writes text to NotebookOutput.
func DisplaySVG(svg, text string) {
	display(map[protocol.MIMEType]any{protocol.MIMEImageSVG: svg}, text)
}

// DisplayPNG shows PNG bytes in the notebook cell, with text as its plain-text alternative.
// Outside a notebook it writes text to NotebookOutput.
func DisplayPNG(png []byte, text string) {
	display(map[protocol.MIMEType]any{protocol.MIMEImagePNG: png}, text)
}

func display(data map[protocol.MIMEType]any, text string) {
	if !gonbui.IsNotebook {
		if text != "" {
			w := NotebookOutput
			if w == nil {
				w = os.Stdout
			}
			fmt.Fprintln(w, text)
		}
		return
	}
	if text != "" {
		data[protocol.MIMETextPlain] = text
	}
	gonbui.SendData(&protocol.DisplayData{Data: data})
	// Wait until GoNB has received it, so that the display keeps its place relative to what
	// the cell prints next, and is not lost if the cell exits right after.
	gonbui.Sync()
}
