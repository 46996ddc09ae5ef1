package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/internal/compilecache"
	"github.com/cifarlab/cifarlab/internal/kernel"
)

// warmSteps is how many steps cache warm trains: the programs depend on the shapes and keyed
// settings, not on the length of the run, and two steps meet a validation.
const warmSteps = 2

// notebookList is the repeatable --notebook flag.
type notebookList []string

func (l *notebookList) String() string     { return strings.Join(*l, ",") }
func (l *notebookList) Set(v string) error { *l = append(*l, v); return nil }

// cacheWarm is `cifarlab cache warm`: the programs of the notebooks and of the training flags
// given, compiled into DIR.
func cacheWarm(args []string, stdout io.Writer) error {
	fs, tf := newTrainFlags(stdout)
	fs.Usage = func() { fmt.Fprint(stdout, cacheUsage) }
	into := fs.String("into", "", "compile into this `DIR`, made a shared folder (default: your own, $"+compilecache.DirEnv+")")
	var notebooks notebookList
	fs.Var(&notebooks, "notebook", "run this `NOTEBOOK` through the real kernel (repeatable)")
	kernelName := fs.String("kernel", kernel.CPUKernel, "the kernelspec that runs --notebook")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if len(notebooks) == 0 && len(tf.set) == 0 {
		return &exitError{code: 2, err: errors.New("nothing to warm: give --notebook NOTEBOOK (e.g. notebooks/01-reproduce.ipynb) or the flags of cifarlab train (e.g. --recipe airbench94)")}
	}
	dir, err := warmDir(*into)
	if err != nil {
		return err
	}
	// This process's backends, and the kernels' processes, compile into dir alone: a program
	// found in a shared folder would not be written there.
	for k, v := range map[string]string{compilecache.DirEnv: dir, compilecache.SharedEnv: ""} {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	for _, nb := range notebooks {
		if err := warmNotebook(nb, *kernelName, tf.set["data"], stdout); err != nil {
			return err
		}
	}
	if len(tf.set) > 0 {
		if err := warmSettings(tf, stdout); err != nil {
			return err
		}
	}
	if *into != "" {
		if err := shareFolder(dir); err != nil {
			return err
		}
	}
	return reportWarm(dir, *into != "", stdout)
}

// warmDir is the folder cache warm compiles into: into, created when missing, else the user's
// own folder of the settings.
func warmDir(into string) (string, error) {
	if into != "" {
		dir, err := filepath.Abs(into)
		if err != nil {
			return "", err
		}
		return dir, os.MkdirAll(dir, 0o700)
	}
	cfg, _, err := compilecache.ConfigFromEnv()
	if err != nil {
		return "", &exitError{code: 2, err: err}
	}
	if cfg.Dir == "" {
		return "", &exitError{code: 2, err: fmt.Errorf("the compile cache is off ($%s=off): give --into DIR", compilecache.DirEnv)}
	}
	return cfg.Dir, nil
}

// warmSettings trains the settings of the flags for warmSteps steps on synthetic records of
// their dataset, sized for a batch of each of its programs.
func warmSettings(tf *trainFlags, stdout io.Writer) error {
	s, err := tf.base()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	s.Run.Steps, s.Run.Epochs, s.Checkpoint.Dir = warmSteps, 0, ""
	if err := s.Validate(); err != nil {
		return &exitError{code: 2, err: err}
	}
	synth := data.SynthOptions{Seed: 1, TrainSize: max(2*s.Data.BatchSize, 256), TestSize: max(2*s.Eval.BatchSize, 200)}
	train, err := data.SynthesizeRecords(s.Data.Spec, data.SplitTrain, synth)
	if err != nil {
		return err
	}
	test, err := data.SynthesizeRecords(s.Data.Spec, data.SplitTest, synth)
	if err != nil {
		return err
	}
	status := training.NewLineStatus(os.Stderr, "warm: ")
	res, err := training.Train(context.Background(), s, training.Env{Train: train, Test: test, Progress: training.ProgressOff, OnEvent: status.Event})
	status.Close(err)
	if err != nil {
		return err
	}
	var flags []string
	for _, name := range tf.order {
		flags = append(flags, "--"+name+" "+tf.set[name])
	}
	fmt.Fprintf(stdout, "warmed %s: %d programs compiled, %d already there (%s)\n", strings.Join(flags, " "),
		res.Timeline.Compiles(""), res.Timeline.Loads(""), res.Timeline)
	return nil
}

// notebookSummary is what kernel/run_notebook.py says of a run.
type notebookSummary struct {
	OK          bool    `json:"ok"`
	FailedCells []int   `json:"failed_cells"`
	Fatal       *string `json:"fatal"`
	WallS       float64 `json:"wall_s"`
}

// warmNotebook runs a notebook through the real kernel (kernel/run_notebook.py), in a scratch
// folder that takes its runs, with the data of dataDir ("" : $CIFARLAB_DATA's).
func warmNotebook(notebook, kernelName, dataDir string, stdout io.Writer) error {
	repo, err := kernel.FindRepo("")
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(notebook)
	if err != nil {
		return err
	}
	scratch, err := os.MkdirTemp("", "cifarlab-cache-warm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	cmd := exec.Command(filepath.Join(repo.VenvDir(), "bin", "python"), filepath.Join(repo.Dir, "kernel", "run_notebook.py"), abs,
		"--kernel", kernelName, "--cwd", scratch, "--first-timeout", "1200", "--timeout", "1200", "--summary", "-")
	cmd.Env = append(os.Environ(), runs.DirEnv+"="+filepath.Join(scratch, "runs"))
	if dataDir != "" {
		cmd.Env = append(cmd.Env, data.DirEnv+"="+dataDir)
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var sum notebookSummary
	if jerr := json.Unmarshal(out, &sum); jerr != nil {
		return fmt.Errorf("cache warm: %s did not run (%v): %s", notebook, err, strings.TrimSpace(string(out)))
	}
	if !sum.OK {
		why := fmt.Sprintf("cells %v failed", sum.FailedCells)
		if sum.Fatal != nil {
			why = *sum.Fatal
		}
		return fmt.Errorf("cache warm: %s with kernel %s: %s (its programs that compiled are kept)", notebook, kernelName, why)
	}
	fmt.Fprintf(stdout, "warmed %s: ran with kernel %s in %.0f s\n", notebook, kernelName, sum.WallS)
	return nil
}

// shareFolder makes dir a shared folder: readable by everyone, writable by its owner only;
// the hit counts, which are per user, go.
func shareFolder(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return os.Chmod(path, 0o755)
		case strings.HasSuffix(path, ".hits"):
			return os.Remove(path)
		}
		return os.Chmod(path, 0o644)
	})
}

// reportWarm says what dir holds, and how to share it.
func reportWarm(dir string, shared bool, stdout io.Writer) error {
	c := compilecache.Open(compilecache.Config{Dir: dir}, func(line string) { fmt.Fprintln(os.Stderr, "cifarlab: "+line) })
	entries, err := c.Entries()
	if err != nil {
		return err
	}
	var size int64
	for _, e := range entries {
		size += e.Size
	}
	fmt.Fprintf(stdout, "%s holds %d compiled programs (%s)\n", dir, len(entries), compilecache.FormatSize(size))
	if shared {
		fmt.Fprintf(stdout, "share it read-only: %s=%s for every user (their own programs still go to $%s)\n",
			compilecache.SharedEnv, dir, compilecache.DirEnv)
	}
	return nil
}
