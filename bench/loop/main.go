// Command loop measures the timeline of a notebook's training cell and of its evaluation
// cell (bench/RESULTS-loop.md): each is one process, as GoNB runs a cell's program, doing what
// the notebooks' cells do, and prints what the cell prints, then the run's timeline
// (runs.Timeline) as JSON. -repeat 2 trains twice in one process, the second time with the
// programs the first compiled (training.Programs), as a lab process that outlives cells would.
//
//	loop -cell train -model resnet20 -steps 10 -batch 64 -test 1000 -run loop-resnet20
//	loop -cell eval -run loop-resnet20 -test 1000
//
// The data is the lab's ($CIFARLAB_DATA, as nb.Open reads it), or that of -data, and the runs
// go to $CIFARLAB_RUNS; -test keeps the first N test images, so that the evaluations stay short.
// Point CIFARLAB_DATA at a writable folder: nb.Open synthesises data there when it holds no
// complete download.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/nb"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

func main() {
	cell := flag.String("cell", "train", "train (lab.Fit) or eval (lab.Load, then Evaluate)")
	model := flag.String("model", "cnn", "architecture of the training cell")
	steps := flag.Int("steps", 20, "training steps")
	batch := flag.Int("batch", 64, "batch size")
	test := flag.Int("test", 1000, "test images evaluated (the first N)")
	run := flag.String("run", "loop", "run name")
	repeat := flag.Int("repeat", 1, "training runs in the process, the later ones with the first's compiled programs (training.Programs)")
	real := flag.String("data", "", "a folder of CIFAR-10 binary files, perhaps partial (/work/c10real), to use instead of the lab's")
	flag.Parse()

	lab := nb.Open(data.CIFAR10()) // the notebook's first cell, run again by every cell
	if *real != "" {               // nb.Open takes only a complete download, else synthesises
		lab.Train = nb.Must(data.LoadSplit(*real, lab.Spec, data.SplitTrain))
		lab.Test = nb.Must(data.LoadSplit(*real, lab.Spec, data.SplitTest))
	}
	var tl any
	switch *cell {
	case "train":
		programs := &training.Programs{} // kept across the -repeat runs of this process
		var timelines []*runs.Timeline
		for i := range *repeat {
			name := *run
			if i > 0 {
				name = fmt.Sprintf("%s-%d", *run, i+1)
			}
			s := lab.Settings()
			s.Model.Arch, s.Run.Steps, s.Data.BatchSize = *model, *steps, *batch
			res := nb.Must(lab.FitEnv(name, s, training.Env{Test: firstImages(lab.Test, *test), Train: lab.Train, Programs: programs}))
			timelines = append(timelines, res.Timeline)
		}
		tl = timelines
	case "eval":
		ck := nb.Must(lab.Load(*run))
		ev := nb.Must(ck.Evaluate(context.Background(), lab.Test, training.EvalOptions{MaxExamples: *test}))
		fmt.Fprintf(os.Stderr, "%s\ntimeline: %s\n", ev.Summary(), ev.Timeline.Short())
		tl = ev.Timeline
	default:
		fmt.Fprintf(os.Stderr, "loop: -cell %q: use train or eval\n", *cell)
		os.Exit(2)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	nb.Check(enc.Encode(tl))
}

// firstImages returns the first n records of r (all of them when r has fewer), sharing memory.
func firstImages(r *data.Records, n int) *data.Records {
	if n <= 0 || n >= r.Len() {
		return r
	}
	c := *r
	c.Pixels, c.RawLabels = r.Pixels[:n*data.ImageBytes], r.RawLabels[:n*r.Spec.LabelBytes]
	return &c
}
