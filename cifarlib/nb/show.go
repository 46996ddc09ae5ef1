package nb

import (
	"errors"
	"fmt"
	"html"
	"path/filepath"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/sweep"
	"github.com/cifarlab/cifarlab/cifarlib/training"

	"gonum.org/v1/plot"
)

// Show displays v in the cell in the richest form it has, with a plain-text alternative (what
// text-only viewers, tests and terminals get):
//
//   - *cifarlib.Summary and *training.EvalResult: an HTML table;
//   - *runs.History: loss and accuracy charts (a History alone does not know its data and
//     machine: the caption says "not recorded"; Show the training.Result, or Compare the run);
//   - *training.Result: the run's summary, then its History's charts (unless lab.Fit's
//     live view drew them already, above);
//   - data.SplitLabels (Records.LabelStats): the label histogram as a chart, with the
//     labels the head cannot represent in red;
//   - *cifarlib.Diagnosis: its report, then the training split's label chart;
//   - []cifarlib.Mistake (cifarlib.ShapeMistakes): a table of mistakes and errors;
//   - runs.Table (Lab.Runs): the runs table;
//   - *Image (ImageGrid): the picture;
//   - *sweep.Table (Lab.Sweep): a sweep's runs grouped by hyperparameter;
//   - anything else: as fmt.Println prints it.
//
// Paths in the data folder ($CIFARLAB_DATA) are printed $CIFARLAB_DATA/..., so that a
// notebook's outputs carry no machine's absolute paths.
//
// Every chart has a caption under it, also in its plain-text alternative, that says which data
// it comes from (SYNTHETIC, in red, or real and verified or not) and, for curves, on which
// machine (backend, devices, precision): see SourceCaption. A chart that cannot be drawn is
// reported as text; Show never stops the cell.
func Show(v any) {
	switch v := v.(type) {
	case *cifarlib.Summary:
		DisplayHTML(v.HTML(), v.String())
	case *training.EvalResult:
		DisplayHTML(v.HTML(), v.Summary())
	case *runs.History:
		showHistory(v, SourceCaption(runs.Source{}))
	case *training.Result:
		var summary strings.Builder
		if err := v.WriteSummary(&summary); err != nil {
			fmt.Fprintln(output(), "error:", err)
		}
		fmt.Fprint(output(), shownText(summary.String()))
		if _, live := drawnLive.Load(v.History); v.History != nil && len(v.History.Points) > 0 && !live {
			showHistory(v.History, SourceCaption(v.Source()))
		}
	case data.SplitLabels:
		showLabels(fmt.Sprintf("labels of %s against a head of %d outputs", filepath.Base(v.Source), v.HeadWidth), v)
	case *cifarlib.Diagnosis:
		fmt.Fprint(output(), shownText(v.String()))
		if len(v.Splits) > 0 {
			showLabels(fmt.Sprintf("%s labels of %s against a head of %d", v.Splits[0].Split, v.Dataset, v.HeadWidth), v.Splits[0])
		}
	case runs.Table:
		DisplayHTML(v.HTML(), v.String())
	case []cifarlib.Mistake:
		showMistakes(v)
	case *Image:
		DisplayImage(v)
	case *sweep.Table:
		DisplayHTML(v.HTML(), v.String())
	default:
		fmt.Fprintln(output(), shownText(fmt.Sprint(v)))
	}
}

func showHistory(h *runs.History, caption Caption) {
	for _, c := range historyCharts(h, caption, true) {
		if c.err != nil {
			fmt.Fprintln(output(), "error:", c.err)
			continue
		}
		DisplayImage(c.img)
	}
}

func showLabels(title string, s data.SplitLabels) {
	caption := DataCaption(s.Dataset, s.Kind)
	img, err := render(caption)(LabelChart(title, s))
	if err != nil {
		fmt.Fprintln(output(), "error:", err)
		return
	}
	img.Text = caption.withText(shownText(s.String()))
	DisplayImage(img)
}

// render returns a function that draws a chart as an Image with the caption under it, passing
// on the chart builder's error.
func render(caption Caption) func(p *plot.Plot, err error) (*Image, error) {
	return func(p *plot.Plot, err error) (*Image, error) {
		if err != nil {
			return nil, err
		}
		return Render(p, caption)
	}
}

func showMistakes(ms []cifarlib.Mistake) {
	var rows, text strings.Builder
	for i, m := range ms {
		r := innermost(m.Err)
		fmt.Fprintf(&text, "%d. %s\n   %T: %v\n", i+1, m.Name, r, r)
		fmt.Fprintf(&rows, "<tr><td>%s</td><td><code>%T</code></td><td>%s</td></tr>",
			html.EscapeString(m.Name), r, html.EscapeString(fmt.Sprint(r)))
	}
	DisplayHTML("<table><tr><th>mistake</th><th>error</th><th>message</th></tr>"+rows.String()+"</table>", text.String())
}

// innermost returns the innermost error of err's chain: the guard's own typed error under any
// wrapping.
func innermost(err error) error {
	for errors.Unwrap(err) != nil {
		err = errors.Unwrap(err)
	}
	return err
}
