package runs_test

import (
	"fmt"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
)

// A run's timeline, as Train records it, in the notebook's short line and in full.
func ExampleTimeline() {
	origin := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return origin.Add(time.Duration(s * float64(time.Second))) }
	tl := runs.NewTimeline(origin)
	tl.Add(runs.PhaseStart, at(0), at(0.6))
	c := tl.Add(runs.PhaseCompile, at(0.6), at(4.5))
	c.Program = runs.ProgramTrainStep
	tl.Add(runs.PhaseFirstStep, at(4.5), at(4.52))
	tl.Add(runs.PhaseSteps, at(4.52), at(7.0)).Count = 299
	c = tl.Add(runs.PhaseCompile, at(7.0), at(7.3))
	c.Program, c.For = runs.ProgramEvaluation, string(runs.PhaseEval)
	tl.Add(runs.PhaseEval, at(7.3), at(7.4)).Count = 10000

	fmt.Println(tl.Short())
	fmt.Println(tl)
	fmt.Println("compiles:", tl.Compiles(""))
	// Output:
	// start 0.6 s · compile 4.2 s · 300 steps 2.5 s · eval 0.1 s
	// start 0.60 s · compile train step 3.90 s · first step 0.02 s · 299 steps 2.48 s · compile evaluation (eval) 0.30 s · eval 0.10 s
	// compiles: 2
}
