package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/sweep"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// exitInterrupted is the exit status of a training run stopped by SIGINT/SIGTERM after saving
// its checkpoint (128 + SIGINT, the shell convention), so scripts do not mistake it for a
// finished run.
const exitInterrupted = 130

func init() {
	register(command{
		name:    "train",
		summary: "train a model (guarded loss, checkpoints, resume; SIGINT saves and exits)",
		run:     runTrain,
	})
}

// trainFlags are the flags of "cifarlab train".
type trainFlags struct {
	dataset, labels, dataDir, arch, backend, checkpoint string
	optimizer, schedule, progress, devices              string
	precision                                           string
	head, steps, batch, warmup, checkpointEvery         int
	evalEvery, evalExamples, logEvery                   int
	seed                                                int64
	from, freeze                                        string
	backboneLR                                          float64
	modelSet                                            bool
	// The airbench94 recipe's flags; set holds the flags given on the command line (with
	// --recipe, the others take the recipe's values, not their defaults).
	recipe, augmentation                    string
	epochs, momentum, biasScaler, smoothing float64
	whitenBiasEpochs, tta                   int
	lookahead                               bool
	set                                     map[string]bool
	lr, minLR, weightDecay                  float64
	guard, asJSON, augment, noEval          bool
	newHead                                 bool
}

func runTrain(args []string, stdout io.Writer) error {
	return trainCommand(context.Background(), args, stdout)
}

// newTrainFlags is the flag set of "cifarlab train" and the flags it fills.
func newTrainFlags(stdout io.Writer) (*flag.FlagSet, *trainFlags) {
	fs := newFlagSet("train", "--dataset cifar10|cifar100 [--labels fine|coarse] [--data DIR] [--recipe airbench94] [--model cnn|resnet18|resnet20|airbench94|linear] "+
		"[--head N] [--guard=true|false] --steps N|--epochs E [--batch B] [--backend cpu|cuda|auto] [--devices N|all] [--precision f32|bf16-mixed] [--checkpoint DIR] "+
		"[--from RUN_DIR [--freeze backbone] [--backbone-lr X] [--new-head]] [--json]", stdout)
	var f trainFlags
	fs.StringVar(&f.dataset, "dataset", "cifar10", "dataset: cifar10 or cifar100")
	fs.StringVar(&f.labels, "labels", "fine", "CIFAR-100 label set: fine (100 classes) or coarse (20)")
	fs.StringVar(&f.dataDir, "data", data.DefaultDir(), "CIFAR data `DIR` (the folder holding the dataset's folder, or its synthetic/ sub-folder) ($"+data.DirEnv+")")
	fs.StringVar(&f.recipe, "recipe", "", "a named recipe: airbench94 (Keller Jordan's airbench94: its network, batch 1024, nesterov, "+
		"triangle schedule, label smoothing 0.2, lookahead, altflip-translate augmentation, 9.9 epochs, TTA 2); the flags given "+
		"explicitly win over it, the others take its values instead of their defaults")
	fs.StringVar(&f.arch, "model", cifarlib.ArchCNN, "architecture: "+strings.Join(cifarlib.Architectures(), ", "))
	fs.IntVar(&f.head, "head", 0, "override the head width (reproduces the head/label mismatch bug); 0 = the dataset's classes")
	fs.BoolVar(&f.guard, "guard", true, "guard the loss: refuse a head/dataset mismatch and out-of-range labels; with false, GoMLX's plain loss "+
		"silently gives such labels zero loss, and the summary says how many")
	fs.IntVar(&f.steps, "steps", 0, "train up to this global `step` (this or --epochs is required, unless --recipe); a resumed run continues to it")
	fs.Float64Var(&f.epochs, "epochs", 0, "instead of --steps: train this many `epochs` (may be fractional; ceil(epochs * train examples / batch) steps, "+
		"the last partial batch of each epoch dropped)")
	fs.IntVar(&f.batch, "batch", 32, "batch size")
	fs.StringVar(&f.backend, "backend", backends.Auto, "compute backend: auto, cpu, go or cuda")
	fs.StringVar(&f.devices, "devices", "1", "data parallelism: shard each batch across N devices, or all (cpu: XLA CPU devices, "+
		"made on request; cuda: the GPUs); --batch must be a multiple of N")
	fs.StringVar(&f.precision, "precision", string(cifarlib.PrecisionF32), "what convolutions and matrix products compute in: f32, or "+
		"bf16-mixed (bfloat16 products, float32 weights, loss, guards and checkpoints; the speed-up is on a GPU)")
	fs.StringVar(&f.checkpoint, "checkpoint", "", "checkpoint `DIR`: saved at the end, on SIGINT and every --checkpoint-every steps; "+
		"if it holds a checkpoint, training resumes from it")
	fs.IntVar(&f.checkpointEvery, "checkpoint-every", 0, "also save a checkpoint every N steps (0: only at the end or on interrupt)")
	fs.BoolVar(&f.asJSON, "json", false, "print the result as JSON (no progress bar)")
	fs.StringVar(&f.optimizer, "optimizer", "adam", "optimizer: adam, adamw, adamax, rmsprop, sgd or nesterov (airbench94's Nesterov SGD "+
		"with decoupled learning rate and weight decay per 1024 examples)")
	fs.Float64Var(&f.lr, "lr", 0, "learning rate (0: 0.001 for the Adam family, 0.1 for sgd, 11.5 per 1024 examples for nesterov)")
	fs.Float64Var(&f.weightDecay, "weight-decay", 0, "AdamW weight decay (0: 0.004 with adamw), or nesterov's per 1024 examples (0: 0.0153)")
	fs.Float64Var(&f.momentum, "momentum", 0, "nesterov's momentum (0: 0.85)")
	fs.Float64Var(&f.biasScaler, "bias-scaler", 0, "nesterov: the batch-norm biases' learning rate is --lr times this (0: 64)")
	fs.IntVar(&f.whitenBiasEpochs, "whiten-bias-epochs", 0, "nesterov with --model airbench94: train the whitening bias for this many epochs, "+
		"then freeze it (0: throughout; --recipe airbench94: 3)")
	fs.Float64Var(&f.smoothing, "label-smoothing", 0, "label smoothing of the training loss, in [0, 1) (0: none; --recipe airbench94: 0.2)")
	fs.BoolVar(&f.lookahead, "lookahead", false, "airbench's lookahead: an EMA of the weights and batch-norm statistics that the weights "+
		"are reset to every 5 steps, and the run ends on")
	fs.StringVar(&f.schedule, "schedule", training.ScheduleConstant, "learning-rate schedule: constant, cosine or triangle (airbench's: "+
		"0.2x rising to 1x at 23% of the steps, then down to 0.07x)")
	fs.IntVar(&f.warmup, "warmup", 0, "linear warm-up steps (cosine schedule)")
	fs.Float64Var(&f.minLR, "min-lr", 0, "final learning rate of the cosine schedule")
	fs.Int64Var(&f.seed, "seed", 0, "seed of the weight initialisation and of the data order")
	fs.BoolVar(&f.augment, "augment", false, "augment the training images with the --augmentation scheme")
	fs.StringVar(&f.augmentation, "augmentation", "", "the scheme of --augment: crop-flip (random crops with 4-pixel padding and "+
		"random flips; the default) or altflip-translate (airbench's alternating flip and 2-pixel translation)")
	fs.IntVar(&f.tta, "tta", 0, "test-time augmentation of the final evaluation: 0 none, 1 mirror, 2 mirror and translate "+
		"(--recipe airbench94: 2; -1: none, also with a recipe)")
	fs.IntVar(&f.evalEvery, "eval-every", 0, "evaluate on the test split every N steps while training (0: about 5 times per run, on 500 test examples; -1: only at the end)")
	fs.IntVar(&f.evalExamples, "eval-examples", 0, "test examples of the periodic evaluations (0: the whole test split, or 500 with --eval-every 0)")
	fs.BoolVar(&f.noEval, "no-eval", false, "skip the final evaluation on the test split")
	fs.IntVar(&f.logEvery, "log-every", 0, "write a progress line to stderr every N steps (0: at most 200 lines per run)")
	fs.StringVar(&f.progress, "progress", "auto", "GoMLX progress bar on stdout: auto (when stdout is a terminal), on or off")
	fs.StringVar(&f.from, "from", "", "transfer from the trained run in `RUN_DIR` (its --checkpoint directory): its backbone is "+
		"carried bit for bit, its head too when --dataset has the run's number of classes (else the head is new at --dataset's width), "+
		"the optimizer state and step start again; --model defaults to the run's")
	fs.BoolVar(&f.newHead, "new-head", false, "with --from: initialise the head afresh from --seed even when --dataset has the run's number of classes")
	fs.StringVar(&f.freeze, "freeze", "", "with --from: \"backbone\" trains the head only (linear probe; the backbone's weights and "+
		"batch-norm statistics stay as carried)")
	fs.Float64Var(&f.backboneLR, "backbone-lr", 0, "with --from: the backbone's learning rate when fine-tuning (0: --lr)")
	return fs, &f
}

// trainCommand runs "cifarlab train" with args until ctx is cancelled (then, as on SIGINT, it
// saves the checkpoint and exits with exitInterrupted).
func trainCommand(ctx context.Context, args []string, stdout io.Writer) error {
	fs, f := newTrainFlags(stdout)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	f.visit(fs)
	cfg, err := f.config()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	cfg.Params = sweep.FlagParams(fs)

	// The first SIGINT (Ctrl-C) or SIGTERM stops training after the current step and saves the
	// checkpoint; a second one kills the process as usual.
	ctx, stop := training.InterruptContext(ctx)
	defer stop()

	// What the run is doing, from its first second: a line per phase on stderr (the compiles and
	// why, the first step, each evaluation's progress), as a notebook cell shows it in place.
	status := training.NewLineStatus(os.Stderr, "")
	cfg.OnEvent = status.Event
	res, err := train(ctx, cfg)
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
	if f.asJSON {
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

// train is training.Train, saying on stderr, before it trains, what would make the run learn
// nothing (Trainer.Warnings; the summary says it again).
func train(ctx context.Context, cfg training.Config) (*training.Result, error) {
	t, err := training.NewTrainer(cfg)
	if err != nil {
		return nil, err
	}
	for _, w := range t.Warnings() {
		fmt.Fprintln(os.Stderr, "WARNING:", w)
	}
	return t.Run(ctx)
}

// config turns the flags into a training.Config.
func (f *trainFlags) config() (training.Config, error) {
	spec, err := data.SpecByName(f.dataset, f.labels)
	if err != nil {
		return training.Config{}, err
	}
	if !slices.Contains(cifarlib.Architectures(), strings.ToLower(f.arch)) {
		return training.Config{}, fmt.Errorf("unknown --model %q: use one of %s", f.arch, strings.Join(cifarlib.Architectures(), ", "))
	}
	if f.recipe != "" && !slices.Contains(training.Recipes(), strings.ToLower(f.recipe)) {
		return training.Config{}, fmt.Errorf("unknown --recipe %q: use one of %s", f.recipe, strings.Join(training.Recipes(), ", "))
	}
	switch {
	case f.steps > 0 && f.epochs > 0:
		return training.Config{}, fmt.Errorf("--steps %d and --epochs %g: give the length of the run once, in steps or in epochs", f.steps, f.epochs)
	case f.steps < 0:
		return training.Config{}, fmt.Errorf("--steps %d: the length of the run must be positive (e.g. --steps 1000)", f.steps)
	case f.epochs < 0:
		return training.Config{}, fmt.Errorf("--epochs %g: the length of the run must be positive (e.g. --epochs 2)", f.epochs)
	case f.steps == 0 && f.epochs == 0 && f.recipe == "":
		return training.Config{}, fmt.Errorf("--steps or --epochs is required: the global step to train to (e.g. --steps 1000), or the epochs (e.g. --epochs 10)")
	}
	// Checked here, before the run loads the data to size itself (its data line would come
	// before the refusal otherwise); training checks it again, for a Config.
	if f.tta < training.TTAOff || f.tta > training.TTAMirrorTranslate {
		return training.Config{}, fmt.Errorf("--tta %d: use 0 (none), 1 (mirror), 2 (mirror and translate), or -1 (none, also with --recipe)", f.tta)
	}
	progress := training.ProgressAuto
	switch f.progress {
	case "auto":
	case "on":
		progress = training.ProgressOn
	case "off":
		progress = training.ProgressOff
	default:
		return training.Config{}, fmt.Errorf("--progress %q: use auto, on or off", f.progress)
	}
	if f.asJSON {
		progress = training.ProgressOff // The progress bar writes to stdout.
	}
	devices, err := backends.ParseDevices(f.devices)
	if err != nil {
		return training.Config{}, fmt.Errorf("--devices %q: use a positive number or all", f.devices)
	}
	precision, err := parsePrecisionFlag(f.precision)
	if err != nil {
		return training.Config{}, err
	}
	cfg := training.Config{
		Recipe: f.recipe, Spec: spec, DataDir: f.dataDir, Head: f.head, Unguarded: !f.guard,
		BackendName: f.backend, Devices: devices, Steps: f.steps, Epochs: f.epochs, BatchSize: orRecipe(f, "batch", f.batch), Seed: f.seed,
		Augment: f.augment, Augmentation: data.Augmentation(f.augmentation),
		Optimizer: orRecipe(f, "optimizer", f.optimizer), LearningRate: f.lr, WeightDecay: f.weightDecay, Schedule: orRecipe(f, "schedule", f.schedule),
		WarmupSteps: f.warmup, MinLearningRate: f.minLR,
		Momentum: f.momentum, BiasScaler: f.biasScaler, WhitenBiasEpochs: f.whitenBiasEpochs, LabelSmoothing: f.smoothing,
		Lookahead: f.lookahead, TTA: f.tta,
		CheckpointDir: f.checkpoint, CheckpointEvery: f.checkpointEvery,
		EvalEvery: f.evalEvery, EvalExamples: f.evalExamples, SkipFinalEval: f.noEval,
		Progress: progress, Log: os.Stderr, LogEvery: f.logEvery, Precision: precision,
		From: f.from, Freeze: f.freeze, BackboneLearningRate: f.backboneLR, Model: f.transferArch(), NewHead: f.newHead,
	}
	cfg.RecipeOff = f.recipeOff(cfg)
	return cfg, nil
}

// transferArch is --model, or "" (the source run's architecture) with --from and no --model,
// or the recipe's with --recipe and no --model.
func (f *trainFlags) transferArch() string {
	if f.from != "" && !f.modelSet || f.recipe != "" && !f.set["model"] {
		return ""
	}
	return f.arch
}

// visit records the flags set on the command line of fs.
func (f *trainFlags) visit(fs *flag.FlagSet) {
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	f.modelSet = f.set["model"]
}

// recipeOff lists the fields of cfg that a flag given on the command line sets to their zero
// value, which --recipe would otherwise fill (training.Config.RecipeOff): e.g.
// --label-smoothing 0 or --lookahead=false, an ablation of the recipe.
func (f *trainFlags) recipeOff(cfg training.Config) []string {
	var off []string
	for _, field := range training.RecipeOffFields {
		name := strings.TrimPrefix(configFlags[field], "--")
		if f.recipe != "" && f.set[name] && reflect.ValueOf(cfg).FieldByName(field).IsZero() {
			off = append(off, field)
		}
	}
	return off
}

// orRecipe is a flag's value, or its zero value when --recipe is given and the flag is not, so
// that the recipe's value applies instead of the flag's default.
func orRecipe[T comparable](f *trainFlags, name string, value T) T {
	var zero T
	if f.recipe != "" && !f.set[name] {
		return zero
	}
	return value
}

// parsePrecisionFlag parses the --precision of train and eval.
func parsePrecisionFlag(s string) (cifarlib.Precision, error) {
	precision, err := cifarlib.ParsePrecision(s)
	if err != nil {
		return "", fmt.Errorf("--precision %q: use %s", s, strings.Join(cifarlib.Precisions(), " or "))
	}
	return precision, nil
}
