// Command cifarlab is the command-line face of the cifarlab lab: it makes synthetic CIFAR
// data, downloads and verifies the real archives, inspects and diagnoses datasets and
// models, trains and evaluates, lists the runs of a runs folder, installs the GoNB kernels and
// starts JupyterLab.
//
// Usage:
//
//	cifarlab <command> [flags]
//
// Run "cifarlab help" for the list of commands and "cifarlab <command> -h" for a command's flags.
// Errors go to stderr and the exit status is non-zero.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one sub-command of cifarlab. Each lives in its own file and registers itself
// from an init function with register.
type command struct {
	name    string
	summary string
	// run executes the command with the arguments that follow its name.
	// It writes results to stdout and returns an error for anything that went wrong.
	run func(args []string, stdout io.Writer) error
}

var commands = map[string]command{}

// register adds a command; it panics on a duplicate name (a programming error).
func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("cifarlab: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// exitError carries a specific exit code (e.g. 1 for "diagnosis found a problem") with a message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a command and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "cifarlab: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	err := c.run(args[1:], stdout)
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "cifarlab %s: %v\n", c.name, inFlags(err))
	var ee *exitError
	if errors.As(err, &ee) && ee.code != 0 {
		return ee.code
	}
	return 1
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: cifarlab <command> [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun \"cifarlab <command> -h\" for the flags of a command.")
}

// newFlagSet returns a FlagSet that reports parse errors as errors (not exits) and prints
// its usage to stdout when asked for -h.
func newFlagSet(name, synopsis string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("cifarlab "+name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "usage: cifarlab %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}
