package nb

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
)

// started is when the program started: in GoNB, when the cell began to run.
var started = time.Now()

// Check stops the cell with err, the way an uncaught exception stops a Python cell: it prints
// "error: " and the message (paths in $CIFARLAB_DATA written as there) after everything the
// cell printed before, and exits with status 1, which makes GoNB mark the cell as failed. An
// interrupted run (ErrInterrupted: the user asked for it, with Kernel → Interrupt) is no error:
// its message alone is printed (where the run is saved, how to go on), and the cell's program
// ends with status 0, the rest of the cell not run; GoNB would print a program's other exit
// status twice, in red, after it ("exit status 130"). A nil err does nothing.
func Check(err error) {
	if err == nil {
		return
	}
	if errors.Is(err, ErrInterrupted) {
		fmt.Fprintln(output(), shownText(err.Error()))
		os.Exit(0)
	}
	fmt.Fprintln(output(), "error:", shownText(err.Error()))
	os.Exit(1)
}

// Must returns v, or stops the cell with err (see Check): `m := nb.Must(builder.Done())`.
func Must[T any](v T, err error) T {
	Check(err)
	return v
}

// CellTime prints how long the cell has run, e.g. "(cell time 390.4s including 20.8s of XLA
// compilation; excluded: GoNB's Go build of the cell)": `defer nb.CellTime()` as a cell's first
// line is GoNB's counterpart of IPython's %%time. The time counts from the start of the cell's
// program, so it leaves out GoNB's Go build of the cell before it; it includes the XLA
// compilation of the programs the cell ran, and says how much of it the runs' timelines
// recorded (Fit, evaluations in the lab process).
func CellTime() {
	elapsed := time.Since(started).Seconds()
	if c := time.Duration(xlaCompile.Load()); c > 0 {
		fmt.Fprintf(output(), "(cell time %.1fs including %.1fs of XLA compilation; excluded: GoNB's Go build of the cell)\n", elapsed, c.Seconds())
		return
	}
	fmt.Fprintf(output(), "(cell time %.1fs; excluded: GoNB's Go build of the cell)\n", elapsed)
}

// xlaCompile is the XLA compilation of this program's runs and evaluations, in nanoseconds, as
// their timelines recorded it (noteCompile), for CellTime.
var xlaCompile atomic.Int64

// noteCompile adds the compiles of tl (nil: none) to what CellTime reports.
func noteCompile(tl *runs.Timeline) {
	if tl == nil {
		return
	}
	d, _ := tl.Total(runs.PhaseCompile)
	xlaCompile.Add(int64(d))
}
