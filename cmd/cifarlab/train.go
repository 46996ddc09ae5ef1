package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/internal/proctree"
)

// exitInterrupted is the exit status of a training run (or sweep) stopped by SIGINT/SIGTERM
// after saving its checkpoints.
const exitInterrupted = proctree.ExitInterrupted

func init() {
	register(command{
		name:    "train",
		summary: "train a model (guarded loss, checkpoints, resume; SIGINT saves and exits)",
		run:     runTrain,
	})
}

// trainFlags are the flags of "cifarlab train": one per setting of training.Fields, each
// bound to its row once (settingFlag), and the command's own (--json, --progress).
type trainFlags struct {
	// set holds the settings given on the command line, by name, as written; order their
	// names in the order given.
	set              map[string]string
	order            []string
	progress         string
	asJSON, required bool
	// recipe is the --recipe of the command line, for the help (usage), which may come first.
	recipe string
}

// settingFlag is the flag of one setting: its default is Defaults' value, Set records the
// value given, which the row reads when the flags are applied (trainFlags.settings).
type settingFlag struct {
	field *training.Field
	flags *trainFlags
}

func (f *settingFlag) String() string {
	if f == nil || f.field == nil {
		return ""
	}
	d := training.Defaults()
	return f.field.Get(&d)
}

func (f *settingFlag) Set(v string) error {
	if _, again := f.flags.set[f.field.Name]; !again {
		f.flags.order = append(f.flags.order, f.field.Name)
	}
	f.flags.set[f.field.Name] = v
	return nil
}

// IsBoolFlag lets a boolean setting be given without a value (--augment).
func (f *settingFlag) IsBoolFlag() bool { return f.field.IsBool() }

func runTrain(args []string, stdout io.Writer) error {
	return trainCommand(context.Background(), args, stdout)
}

// newTrainFlags is the flag set of "cifarlab train" and the flags it fills.
func newTrainFlags(stdout io.Writer) (*flag.FlagSet, *trainFlags) {
	synopsis := trainSynopsis()
	fs := newFlagSet("train", synopsis, stdout)
	f := &trainFlags{set: map[string]string{}}
	fs.Usage = func() { f.usage(fs, synopsis, stdout) }
	for _, field := range training.Fields() {
		fs.Var(&settingFlag{field: field, flags: f}, field.Name, flagUsage(field.Usage))
	}
	fs.BoolVar(&f.asJSON, "json", false, "print the result as JSON (no progress bar)")
	fs.StringVar(&f.progress, "progress", "auto", "GoMLX progress bar on stdout: auto (when stdout is a terminal), on or off")
	return fs, f
}

// trainCommand runs "cifarlab train" with args until ctx is cancelled (then, as on SIGINT, it
// saves the checkpoint and exits with exitInterrupted).
func trainCommand(ctx context.Context, args []string, stdout io.Writer) error {
	fs, f := newTrainFlags(stdout)
	f.recipe = recipeArg(args)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	s, err := f.settings()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	env, err := f.env(stdout)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	return trainSettings(ctx, s, env, f.asJSON, stdout)
}

// trainSettings trains s in env as "cifarlab train" does: its summary (or JSON) on stdout, the
// status 2 for settings the library refuses, exitInterrupted for an interrupted run.
func trainSettings(ctx context.Context, s training.Settings, env training.Env, asJSON bool, stdout io.Writer) error {
	// The first SIGINT (Ctrl-C) or SIGTERM stops training after the current step and saves the
	// checkpoint; a second one kills the process as usual.
	ctx, stop := training.InterruptContext(ctx)
	defer stop()
	// What the run is doing, from its first second: a line per phase on stderr (the compiles and
	// why, the first step, each evaluation's progress), as a notebook cell shows it in place.
	status := training.NewLineStatus(os.Stderr, "")
	env.OnEvent = status.Event
	res, err := training.Train(ctx, s, env)
	status.Close(err)
	if err != nil {
		var ce *training.ConfigError
		var nr *training.NotRunError
		var am *training.ArchMismatchError
		if errors.As(err, &ce) || errors.Is(err, backends.ErrDevices) || errors.As(err, &nr) || errors.As(err, &am) {
			return &exitError{code: 2, err: err}
		}
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else if err := res.WriteSummary(stdout); err != nil {
		return err
	}
	if res.Interrupted {
		msg := fmt.Sprintf("interrupted at step %d of %d", res.EndStep, res.TargetStep)
		if res.CheckpointDir != "" {
			msg += fmt.Sprintf("; checkpoint saved in %s: run the same command to resume", res.CheckpointDir)
		} else {
			msg += " (no --checkpoint: progress not saved)"
		}
		return &exitError{code: exitInterrupted, err: errors.New(msg)}
	}
	return nil
}

// settings are the run's settings (base), validated; the length of the run is required.
func (f *trainFlags) settings() (training.Settings, error) {
	_, steps := f.set["steps"]
	_, epochs := f.set["epochs"]
	if _, recipe := f.set["recipe"]; !steps && !epochs && !recipe {
		return training.Settings{}, errors.New("--steps or --epochs is required: the global step to train to (e.g. --steps 1000), or the epochs (e.g. --epochs 10)")
	}
	s, err := f.base()
	if err != nil {
		return training.Settings{}, err
	}
	return s, s.Validate()
}

// base are the settings of the flags given: Defaults (or --recipe's) with the flags applied,
// and the flags given as the run's params (a sweep's base settings). A transfer (--from)
// without --model takes the source run's architecture.
func (f *trainFlags) base() (training.Settings, error) {
	s := training.Defaults()
	if err := s.Apply(f.set); err != nil {
		return training.Settings{}, err
	}
	s.Record.Params = maps.Clone(f.set)
	delete(s.Record.Params, "checkpoint") // where the run is, not how it trains
	return s, nil
}

// env is the run's Env: the log on stderr and the progress bar of --progress (off with
// --json, whose result is stdout).
func (f *trainFlags) env(stdout io.Writer) (training.Env, error) {
	env := training.Env{Log: os.Stderr, Progress: training.ProgressAuto,
		Warn: func(w string) { fmt.Fprintln(os.Stderr, "WARNING:", w) }} // before it trains; the summary says it again
	switch f.progress {
	case "auto":
	case "on":
		env.Progress = training.ProgressOn
	case "off":
		env.Progress = training.ProgressOff
	default:
		return env, fmt.Errorf("--progress %q: use auto, on or off", f.progress)
	}
	if f.asJSON {
		env.Progress = training.ProgressOff // The progress bar writes to stdout.
	}
	return env, nil
}
