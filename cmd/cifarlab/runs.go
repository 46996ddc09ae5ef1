package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
)

func init() {
	register(command{
		name:    "runs",
		summary: "list the runs of a runs folder: what each trained, how far, its test accuracy (the notebooks' lab.Runs())",
		run:     runRuns,
	})
}

func runRuns(args []string, stdout io.Writer) error {
	fs := newFlagSet("runs", "[--data DIR | --runs DIR] [--json]", stdout)
	dataDir := fs.String("data", data.DefaultDir(), "CIFAR data `DIR`, whose runs/ sub-folder holds the notebooks' runs ($"+data.DirEnv+")")
	runsDir := fs.String("runs", "", "the runs `DIR` itself (default: $"+runs.DirEnv+", else DIR/runs of --data); each run is a sub-folder, "+
		"as `cifarlab train --checkpoint DIR/NAME` and the notebooks' lab.Fit write them")
	asJSON := fs.Bool("json", false, "print the runs as JSON (one object per run, the fields of runs.Info)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	dir := *runsDir
	if dir == "" {
		dir = runs.DefaultDir(*dataDir)
	}
	list, err := runs.List(dir)
	if err != nil {
		return fmt.Errorf("%w: pass the folder of runs with --runs DIR (or the data folder with --data)", err)
	}
	if *asJSON {
		if list == nil {
			list = runs.Table{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	if len(list) == 0 {
		_, err := fmt.Fprintf(stdout, "no runs in %s\n", dir)
		return err
	}
	fmt.Fprintf(stdout, "runs in %s (TensorBoard: %s)\n", dir, tensorboardHint(dir))
	return list.WriteTable(stdout)
}
