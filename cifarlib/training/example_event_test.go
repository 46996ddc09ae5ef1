package training_test

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// The lines a notebook cell's status line and `cifarlab train` show for a run's events
// (Env.OnEvent; training.Status draws them with the time each phase has taken).
func ExampleEvent_Line() {
	for _, e := range []training.Event{
		{Kind: training.EventCompile, Program: runs.ProgramTrainStep, Reason: training.ReasonFirst},
		{Kind: training.EventStep, Step: 1, Steps: 200, Loss: 2.302585},
		{Kind: training.EventEval, Examples: 10000, Done: 3000, TTA: training.TTAMirrorTranslate, Purpose: runs.PhaseEval, Split: "test"},
	} {
		fmt.Println(e.Line(false))
	}
	// Output:
	// compiling the train step (first time for this shape)…
	// step 1/200 · loss 2.3026
	// evaluating 10,000 images with TTA level 2 (6 views)… 3,000/10,000
}

// Why a run compiles a train step of its own instead of the one a process keeps: the
// difference of their ProgramKeys.
func ExampleProgramKey_Diff() {
	kept := training.ProgramKey{Shapes: "batch=64", Constants: "label-smoothing=on"}
	run := training.ProgramKey{Shapes: "batch=128", Constants: "label-smoothing=on"}
	fmt.Println(run.Diff(kept))
	// Output:
	// [batch size 128, not 64]
}
