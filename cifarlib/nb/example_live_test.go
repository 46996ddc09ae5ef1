package nb_test

import (
	"fmt"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/cifarlab/cifarlab/cifarlib/nb"
)

// textSink prints the text alternative of each chart a live view sends; in a notebook,
// nb.NotebookSink redraws the charts (SVG and PNG) in the cell.
type textSink struct{}

func (textSink) Update(id string, img *nb.Image) { fmt.Println(img.Text) }

// A live view fed by a training run's History points (what lab.Fit does in a notebook, with
// training.Config.OnPoint): drawn at its first point, then at most every Every, and always at
// the end; each chart's caption says the run's data and machine (its Source).
func ExampleLive() {
	live := nb.NewLive(textSink{}, 0)
	live.Every = time.Hour // no redraw between the first drawing and Finish
	live.Source = runs.Source{Data: &data.Provenance{Dataset: "cifar10", Kind: data.KindVerified}, Backend: "xla:cpu (XLA CPU plugin)", Devices: 1}
	for step := 1; step <= 3; step++ {
		_ = live.Add(runs.HistoryPoint{Step: step, Loss: 2 / float64(step), Accuracy: 0.1 * float64(step)})
	}
	live.Finish(nil)
	// Output:
	// loss curve: 1 point, to step 1
	// data: real cifar10, verified · machine: xla:cpu (XLA CPU plugin), 1 device
	// accuracy curve: 1 point, to step 1
	// data: real cifar10, verified · machine: xla:cpu (XLA CPU plugin), 1 device
	// loss curve: 3 points, to step 3
	// data: real cifar10, verified · machine: xla:cpu (XLA CPU plugin), 1 device
	// accuracy curve: 3 points, to step 3
	// data: real cifar10, verified · machine: xla:cpu (XLA CPU plugin), 1 device
}
