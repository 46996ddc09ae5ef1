// Command loopfed measures the researcher's loop in one process (issue 47 item 1): a run, then
// re-runs that each change one value (label smoothing, learning rate, seed, steps), all with
// one training.Programs, as the lab process keeps it across cells. For each it prints the time
// from Train's call to the start of its first step (the timeline's first_step phase) and to
// the first step's end (its EventStep), and the timeline (bench/RESULTS-loop.md).
//
//	GOMLX_BACKEND=xla:PLUGIN loopfed -data /work/data/c10sub -model airbench94 -train 2048 -batch 256
//
// It uses the public API only (training.Settings since issue 46; the tree before it took a
// training.Config). The model trains for -steps steps, without
// validations or a final evaluation: what is measured is the start.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/nb"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

func main() {
	dir := flag.String("data", "/work/data/c10sub", "a folder of CIFAR-10 binary files")
	model := flag.String("model", cifarlib.ArchAirbench94, "architecture: airbench94 trains the airbench94 recipe, another the default optimiser")
	n := flag.Int("train", 2048, "training images (the first N)")
	batch := flag.Int("batch", 256, "batch size")
	steps := flag.Int("steps", 2, "training steps of each run")
	lr := flag.Float64("lr", 5, "the changed learning rate (airbench94's is 11.5 per 1024 examples, Adam's 0.001)")
	flag.Parse()

	spec := data.CIFAR10()
	train := nb.Must(data.LoadSplit(*dir, spec, data.SplitTrain))
	if *n < train.Len() {
		c := *train
		c.Pixels, c.RawLabels = train.Pixels[:*n*data.ImageBytes], train.RawLabels[:*n*spec.LabelBytes]
		train = &c
	}
	base := training.Defaults()
	if *model == cifarlib.ArchAirbench94 {
		base = training.Airbench94()
	}
	must(base.Apply(map[string]string{"model": *model, "batch": fmt.Sprint(*batch), "steps": fmt.Sprint(*steps), "seed": "1",
		"eval-every": "-1", "no-eval": "true"}))
	programs := &training.Programs{}
	fmt.Printf("%-22s %12s %12s %s\n", "run", "step 1 from", "step 1 done", "compiles (timeline)")
	for _, r := range []struct {
		name   string
		values map[string]string // the settings changed, by their names in training.Fields
	}{
		{"first", nil},
		{"identical", nil},
		{"label smoothing 0.1", map[string]string{"label-smoothing": "0.1"}},
		{"learning rate", map[string]string{"lr": fmt.Sprint(*lr)}},
		{"seed 2", map[string]string{"seed": "2"}},
		{"steps +1", map[string]string{"steps": fmt.Sprint(*steps + 1)}},
	} {
		s := base
		must(s.Apply(r.values))
		called := time.Now()
		var stepDone time.Duration
		env := training.Env{Train: train, Progress: training.ProgressOff, Programs: programs, Clock: called}
		env.OnEvent = func(e training.Event) {
			if e.Kind == training.EventStep && e.Step == 1 && stepDone == 0 {
				stepDone = time.Since(called)
			}
		}
		res, err := training.Train(context.Background(), s, env)
		if err != nil {
			fmt.Fprintf(os.Stderr, "loopfed: %s: %v\n", r.name, err)
			os.Exit(1)
		}
		var first time.Duration // the start of the timeline's first step
		for _, e := range res.Timeline.Events {
			if e.Phase == runs.PhaseFirstStep {
				first = e.Start
				break
			}
		}
		fmt.Printf("%-22s %11.2fs %11.2fs %d (%s)\n", r.name, first.Seconds(), stepDone.Seconds(), res.Timeline.Compiles(""), res.Timeline.Short())
	}
}

// must stops the program on err.
func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "loopfed:", err)
		os.Exit(1)
	}
}
