package nb

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cifarlab/cifarlab/internal/proctree"
)

// started is when the program started: in GoNB, when the cell began to run.
var started = time.Now()

// Check stops the cell with err, the way an uncaught exception stops a Python cell: it prints
// "error: " and the message (paths in $CIFARLAB_DATA written as there) after everything the
// cell printed before, and exits with status 1, which makes GoNB mark the cell as failed. An
// interrupted run (ErrInterrupted) is printed without "error: " and exits with status 130, as a
// program stopped by Ctrl-C. A nil err does nothing.
func Check(err error) {
	if err == nil {
		return
	}
	if errors.Is(err, ErrInterrupted) {
		fmt.Fprintln(output(), shownText(err.Error()))
		os.Exit(proctree.ExitInterrupted)
	}
	fmt.Fprintln(output(), "error:", shownText(err.Error()))
	os.Exit(1)
}

// Must returns v, or stops the cell with err (see Check): `m := nb.Must(builder.Done())`.
func Must[T any](v T, err error) T {
	Check(err)
	return v
}

// CellTime prints how long the cell has run, e.g. "(cell time 12.3s, compilation excluded)": `defer nb.CellTime()`
// as a cell's first line is GoNB's counterpart of IPython's %%time. The time counts from the
// start of the cell's program, so it leaves out GoNB's compilation before it.
func CellTime() {
	fmt.Fprintf(output(), "(cell time %.1fs, compilation excluded)\n", time.Since(started).Seconds())
}
