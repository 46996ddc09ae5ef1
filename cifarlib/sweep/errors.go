package sweep

import "fmt"

// GridError reports a grid, list or base setting the sweep refuses: which argument, what is
// wrong with it (Err: the error that refused it, when there is one) and how to fix it.
type GridError struct {
	Arg, Problem, Fix string
	Err               error
}

func (e *GridError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("sweep: %s %s: %v: %s", e.Arg, e.Problem, e.Err, e.Fix)
	}
	return fmt.Sprintf("sweep: %s %s: %s", e.Arg, e.Problem, e.Fix)
}

// Unwrap returns the error that refused the argument, if any.
func (e *GridError) Unwrap() error { return e.Err }

// NameUsedError reports a sweep name already used in the runs folder with another grid.
type NameUsedError struct {
	Name, Runs string
	// Old and New are the two sweeps' grids and base settings.
	Old, New string
}

func (e *NameUsedError) Error() string {
	return fmt.Sprintf("sweep: the name %q is already used in %s by another sweep (%s; this one: %s): "+
		"choose another --name, or repeat the same grid and flags to continue that sweep", e.Name, e.Runs, e.Old, e.New)
}

// SettingsError reports a task whose run folder already holds a run with other settings.
type SettingsError struct {
	Dir, Task, Problem string
}

func (e *SettingsError) Error() string {
	return fmt.Sprintf("sweep: task %s: run folder %s cannot be reused: %s; move that folder away or choose another --name",
		e.Task, e.Dir, e.Problem)
}

// RunsFolderError reports a runs folder that cannot be written.
type RunsFolderError struct {
	Dir string
	Err error
	Fix string
}

func (e *RunsFolderError) Error() string {
	return fmt.Sprintf("sweep: the runs folder %q cannot be written: %v: %s", e.Dir, e.Err, e.Fix)
}

func (e *RunsFolderError) Unwrap() error { return e.Err }

// SlurmError reports a Slurm command that failed, with its own message.
type SlurmError struct {
	// Command is the command line, Message what it printed on stderr (or why it did not run).
	Command, Message string
	Err              error
}

func (e *SlurmError) Error() string {
	return fmt.Sprintf("sweep: %s failed: %v: %s", e.Command, e.Err, e.Message)
}

func (e *SlurmError) Unwrap() error { return e.Err }
