package training

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"
)

// always is the resume rule of the settings a resumed run must keep.
func always(_, _ *Settings) bool { return true }

// fields is the table. Each row binds a name to a Settings field and says what it takes
// (values); the values' types come from the fields (reflection, as GoMLX's commandline settings
// take theirs from the defaults), the defaults from Defaults() (Field.Default). A usage names
// another setting in braces ({from}).
var fields = []*Field{
	custom(&Field{Name: "recipe", Path: "Recipe", Label: "recipe", Role: Host,
		values: values{choices: Recipes(), unsaid: []string{""}},
		Usage:  "start from a named recipe's settings; the other settings given win over it",
		get:    func(s *Settings) string { return s.Recipe }, set: setRecipe}),
	custom(&Field{Name: "dataset", Path: "Data.Spec", Label: "dataset", Role: Shapes, resume: always,
		values: choices(data.Names()...), Usage: "the dataset",
		get: func(s *Settings) string { return s.Data.Spec.Name }, set: setDataset}),
	custom(&Field{Name: "labels", Path: "Data.Spec", Label: "labels", Role: Shapes, resume: always,
		values: choices(data.LabelsFine.String(), data.LabelsCoarse.String()),
		Usage:  "CIFAR-100's label set: its 100 fine classes or its 20 coarse ones",
		get:    func(s *Settings) string { return s.Data.Spec.Labels.String() }, set: setLabels}),
	named(bound("model", "Model.Arch", "model", Shapes, always, values{choices: cifarlib.Architectures(), unsaid: []string{ArchOfSource}},
		"the architecture; with {from}, the source run's ("+ArchOfSource+") unless given")),
	bound("head", "Model.Head", "head", Shapes, always, above(0).or(0, "the dataset's classes"),
		"override the head width (reproduces the head/label mismatch bug)"),
	inverted(bound("guard", "Model.Unguarded", "guard", Shapes, nil, anyValue,
		"guard the loss: refuse a head/dataset mismatch and out-of-range labels; with false, GoMLX's plain loss silently gives such labels zero loss, and the summary says how many")),
	bound("batch", "Data.BatchSize", "batch size", Shapes, always, above(0), "batch size (the global batch, across devices)"),
	bound("seed", "Run.Seed", "seed", Fed, always, anyValue, "seed of the weight initialisation and of the data order"),
	bound("augment", "Data.Augment", "augment", Host, always, anyValue, "augment the training images with the {augmentation} scheme"),
	named(bound("augmentation", "Data.Augmentation", "augmentation", Host, bothAugment, choices(augmentationNames()...),
		"the scheme of {augment}: crop-flip (random crops with 4-pixel padding and random flips) or altflip-translate (airbench's alternating flip and 2-pixel translation)")),
	custom(&Field{Name: "optimizer", Path: "Optimizer", Label: "optimizer", Role: Shapes, resume: always,
		values: choices(optimizers.Algorithms()...),
		Usage:  "the optimizer (nesterov: airbench94's Nesterov SGD with decoupled learning rate and weight decay per 1024 examples); another algorithm than the recipe's takes its own defaults",
		get:    func(s *Settings) string { return algorithm(s.Optimizer) }, set: setOptimizer}),
	optimizerField("lr", "LearningRate", "learning rate", atLeast(0), "learning rate (nesterov's: per 1024 examples)"),
	keyedWhen(optimizerField("weight-decay", "WeightDecay", "weight decay", atLeast(0), "weight decay: adamw's, or nesterov's per 1024 examples"),
		func(s *Settings) bool { return algorithm(s.Optimizer) == (optimizers.AdamW{}).Algorithm() }), // GoMLX's Adam builds it in
	optimizerField("momentum", "Momentum", "momentum", fraction, "nesterov's momentum"),
	optimizerField("bias-scaler", "BiasScaler", "bias scaler", atLeast(0), "nesterov: the batch-norm biases' learning rate is {lr} times this"),
	optimizerField("whiten-bias-epochs", "WhitenBiasEpochs", "whitening bias epochs", atLeast(0),
		"nesterov with {model} "+cifarlib.ArchAirbench94+": train the whitening bias for this many epochs, then freeze it (0: throughout)"),
	withKey(bound("label-smoothing", "Run.LabelSmoothing", "label smoothing", Fed, always, fraction,
		"label smoothing of the training loss (0: none)"), smoothingKey),
	bound("lookahead", "Run.Lookahead", "lookahead", Shapes, always, anyValue,
		"airbench's lookahead: an EMA of the weights and batch-norm statistics that the weights are reset to every 5 steps, and the run ends on"),
	named(bound("schedule", "Schedule.Name", "schedule", Shapes, always, choices(optimizers.ScheduleConstant, optimizers.ScheduleCosine, optimizers.ScheduleTriangle),
		"learning-rate schedule (triangle: airbench's, 0.2x rising to 1x at 23% of the steps, then down to 0.07x)")),
	bound("warmup", "Schedule.WarmupSteps", "warmup steps", Fed, savedCosine, atLeast(0), "linear warm-up steps (cosine schedule)"),
	bound("min-lr", "Schedule.MinLearningRate", "min learning rate", Fed, savedCosine, atLeast(0), "final learning rate of the cosine schedule"),
	lengthField(bound("steps", "Run.Steps", "steps", Fed, nil, above(0),
		"train up to this global `step` (this or {epochs} is required, unless {recipe}); a resumed run continues to it")),
	lengthField(bound("epochs", "Run.Epochs", "epochs", Fed, nil, above(0),
		"instead of {steps}: train this many `epochs` (may be fractional; ceil(epochs * train examples / batch) steps, the last partial batch of each epoch dropped)")),
	bound("from", "Transfer.From", "transfer source", Host, always, folder("a run's folder"),
		"transfer from the trained run in `RUN_DIR` (its {checkpoint} folder): its backbone is carried bit for bit, its head too when {dataset} has the run's number of classes (else the head is new at {dataset}'s width), the optimizer state and step start again; {model} defaults to the run's"),
	named(bound("freeze", "Transfer.Freeze", "freeze", Shapes, always, choices("", FreezeBackbone).meaning("", "fine-tune everything").meaning(FreezeBackbone, "linear probe"),
		"with {from}, what does not train: the backbone (its weights and batch-norm statistics stay as carried), or nothing")),
	keyedWhen(bound("backbone-lr", "Transfer.BackboneLearningRate", "backbone learning rate", Fed, always, atLeast(0),
		"with {from}: the backbone's learning rate when fine-tuning (0: {lr})"),
		func(s *Settings) bool { return s.Transfer.From != "" }), // backboneRateOptimizer's ratio
	bound("new-head", "Transfer.NewHead", "new head", Host, nil, anyValue,
		"with {from}: initialise the head afresh from {seed} even when {dataset} has the run's number of classes"),
	bound("tta", "Eval.TTA", "TTA", Shapes, nil, onlySpecial(special{value: TTANone, meaning: "none"},
		special{value: TTAMirror, meaning: "mirror"}, special{value: TTAMirrorTranslate, meaning: "mirror and translate"}),
		"test-time augmentation of the final evaluation"),
	bookkeeping(bound("eval-every", "Eval.Every", "eval every", Host, nil,
		above(0).or(EvalAuto, fmt.Sprintf("about %d times per run", defaultEvals)).or(EvalOff, "never"),
		"evaluate on the test split every N steps while training")),
	bookkeeping(bound("eval-examples", "Eval.Examples", "eval examples", Host, nil, above(0).or(0, "the whole test split"),
		"test examples of each evaluation while training")),
	bookkeeping(bound("eval-batch", "Eval.BatchSize", "eval batch size", Shapes, nil, above(0), "batch size of the evaluations")),
	bound("no-eval", "Eval.SkipFinal", "no final evaluation", Host, nil, anyValue, "skip the final evaluation on the test split"),
	bookkeeping(bound("data", "Data.Dir", "data folder", Host, nil, folder("a folder"),
		"CIFAR data `DIR` (the folder holding the dataset's folder, or its synthetic/ sub-folder) ($"+data.DirEnv+")")),
	bookkeeping(bound("checkpoint", "Checkpoint.Dir", "checkpoint folder", Host, nil, folder("a folder"),
		"checkpoint `DIR`: saved at the end, on SIGINT and every {checkpoint-every} steps; if it holds a checkpoint, training resumes from it")),
	bookkeeping(bound("checkpoint-every", "Checkpoint.Every", "checkpoint every", Host, nil, above(0).or(0, "only at the end or on interrupt"),
		"also save a checkpoint every N steps")),
	bookkeeping(bound("checkpoint-keep", "Checkpoint.Keep", "checkpoints kept", Host, nil, above(0), "the number of checkpoints kept")),
	named(bound("backend", "Compute.Backend", "backend", Shapes, nil, values{choices: []string{backends.Auto, backends.CPU, backends.Go, backends.CUDA}, open: true},
		"compute backend (or a GoMLX configuration, e.g. xla:cpu)")),
	custom(&Field{Name: "devices", Path: "Compute.Devices", Label: "devices", Role: Shapes,
		values: above(0).orSaid(backends.DevicesAll, "all"),
		Usage:  "data parallelism: shard each batch across `N|all` devices (cpu: XLA CPU devices, made on request; cuda: the GPUs); {batch} must be a multiple of N",
		get:    getDevices, set: setDevices, whole: true, number: func(s *Settings) float64 { return float64(s.Compute.Devices) }}),
	named(bound("precision", "Compute.Precision", "precision", Shapes, nil, choices(cifarlib.Precisions()...),
		"what convolutions and matrix products compute in (bf16-mixed: bfloat16 products, float32 weights, loss, guards and checkpoints; the speed-up is on a GPU)")),
	bookkeeping(bound("history-every", "Record.HistoryEvery", "history every", Host, nil, above(0).or(0, fmt.Sprintf("at most %d points per run", defaultMaxPoints)),
		"record a history point every N steps")),
	bookkeeping(bound("log-every", "Record.LogEvery", "log every", Host, nil, above(0).or(0, fmt.Sprintf("at most %d lines per run", defaultMaxPoints)),
		"write a progress line to stderr every N steps")),
}

// folder takes any folder, said in words.
func folder(words string) values { v := anyValue; v.say = words; return v }

// custom is the row f, whose get and set are its own, with its range said from its values.
// Its set refuses a value its values do not take (check), and a ValueError or ConfigError its
// set returns without a range says the row's.
func custom(f *Field) *Field {
	f.Range, f.Choices = f.values.words(f.whole), f.values.said()
	set := f.set
	f.set = func(s *Settings, v string) error {
		err := set(s, v)
		if ve, ok := err.(*ValueError); ok && ve.Range == "" {
			ve.Range = f.Range
		}
		if ce, ok := err.(*ConfigError); ok && ce.Reason == "" {
			ce.Reason = "use " + f.Range
		}
		if err != nil {
			return err
		}
		return f.check(s)
	}
	return f
}

// bound is the row of the Settings field at path (Part.Field), read and written by its Go type,
// taking vals.
func bound(name, path, label string, role Role, resume func(saved, requested *Settings) bool, vals values, usage string) *Field {
	f := &Field{Name: name, Path: path, Label: label, Role: role, resume: resume, values: vals, Usage: usage}
	switch settingsField(&Settings{}, path).Kind() {
	case reflect.Bool:
		f.isBool = true
	case reflect.Int, reflect.Int64:
		f.whole = true
		f.number = func(s *Settings) float64 { return float64(settingsField(s, path).Int()) }
	case reflect.Float64:
		f.number = func(s *Settings) float64 { return settingsField(s, path).Float() }
	}
	f.get = func(s *Settings) string { return formatValue(settingsField(s, path)) }
	f.set = func(s *Settings, v string) error {
		if err := parseValue(settingsField(s, path), v); err != nil {
			return &ValueError{Field: name, Value: v, Range: f.Range}
		}
		return nil
	}
	custom(f)
	if f.isBool {
		f.Range = "true or false"
	}
	return f
}

// bookkeeping is the row f of a setting that says how a run is kept and watched, not what it
// trains (Field.Bookkeeping).
func bookkeeping(f *Field) *Field {
	f.Bookkeeping = true
	return f
}

// keyedWhen is the Fed row f, whose value the programs of a run of s hold as a constant when
// constant(s) says so (it is then part of ProgramKey).
func keyedWhen(f *Field, constant func(s *Settings) bool) *Field {
	return withKey(f, func(s *Settings, value string) (string, bool) { return value, constant(s) })
}

// withKey is the Fed row f with its keyed rule (Field.keyedValue).
func withKey(f *Field, keyed func(s *Settings, value string) (string, bool)) *Field {
	f.keyed = keyed
	return f
}

// smoothingKey keys label smoothing on or off: the loss without it is another graph (trainLoss).
// In bf16-mixed its value is a constant of the graph, and keyed.
func smoothingKey(s *Settings, value string) (string, bool) {
	switch {
	case s.Run.LabelSmoothing == 0:
		return "off", true
	case !fedSmoothing(s):
		return value, true
	}
	return "on", true
}

// inverted is f with its boolean read the other way round (the setting guard sets
// Model.Unguarded).
func inverted(f *Field) *Field {
	get, set := f.get, f.set
	f.get = func(s *Settings) string { return strconv.FormatBool(get(s) != "true") }
	f.set = func(s *Settings, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return &ValueError{Field: f.Name, Value: v, Range: f.Range}
		}
		return set(s, strconv.FormatBool(!b))
	}
	return f
}

// lengthField is f, the length of the run in steps or in epochs, which replaces the other
// (unless 0): a run's length is given once. Its 0 is "not given".
func lengthField(f *Field) *Field {
	f.values.unset = true
	set := f.set
	f.set = func(s *Settings, v string) error {
		if err := set(s, v); err != nil {
			return err
		}
		switch {
		case f.Name == "steps" && s.Run.Steps != 0:
			s.Run.Epochs = 0
		case f.Name == "epochs" && s.Run.Epochs != 0:
			s.Run.Steps = 0
		}
		return nil
	}
	return f
}

// named is f, whose values are names: read in lower case, one its values take.
func named(f *Field) *Field {
	set := f.set
	f.set = func(s *Settings, v string) error {
		if v = strings.ToLower(v); !f.values.takesName(v) {
			return &ValueError{Field: f.Name, Value: v, Range: f.Range, Unknown: true}
		}
		return set(s, v)
	}
	return f
}

// optimizerField is the row of an optimizer's setting (the Go field of the algorithms that
// have it), which the other algorithms leave at zero.
func optimizerField(name, goField, label string, vals values, usage string) *Field {
	f := &Field{Name: name, Path: "Optimizer." + goField, Label: label, Role: Fed, resume: always, values: vals, Usage: usage}
	f.whole = goField == "WhitenBiasEpochs"
	f.applies = func(s *Settings) bool { _, ok := optimizers.Param(s.Optimizer, goField); return ok }
	f.number = func(s *Settings) float64 { v, _ := optimizers.Param(s.Optimizer, goField); return v }
	f.get = func(s *Settings) string { return strconv.FormatFloat(f.number(s), 'g', -1, 64) }
	f.set = func(s *Settings, v string) error {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || f.whole && x != math.Trunc(x) {
			return &ValueError{Field: name, Value: v, Range: f.Range}
		}
		o, ok := optimizers.WithParam(s.Optimizer, goField, x)
		if !ok && x != 0 {
			return &ConfigError{Field: f.Path, Value: v, Reason: fmt.Sprintf("%s needs Optimizer %s", label, strings.Join(algorithmsWith(goField), " or "))}
		}
		s.Optimizer = o
		return nil
	}
	return custom(f)
}

// settingsField is the field of s at path, e.g. "Data.BatchSize".
func settingsField(s *Settings, path string) reflect.Value {
	v := reflect.ValueOf(s).Elem()
	for part := range strings.SplitSeq(path, ".") {
		v = v.FieldByName(part)
	}
	return v
}

// formatValue writes v as Set reads it.
func formatValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	}
	return v.String()
}

// parseValue sets v from s, by v's kind: a finite number, a whole number, a boolean, or a
// name (lower case, without spaces around it) or path (as given).
func parseValue(v reflect.Value, s string) error {
	switch v.Kind() {
	case reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("not a finite number")
		}
		v.SetFloat(x)
	case reflect.Int, reflect.Int64:
		x, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
		if err != nil {
			return err
		}
		v.SetInt(x)
	case reflect.Bool:
		x, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		v.SetBool(x)
	default:
		v.SetString(s)
	}
	return nil
}

// algorithmsWith lists the algorithms that have the setting goField.
func algorithmsWith(goField string) []string {
	var names []string
	for _, o := range algorithmDefaults() {
		if _, ok := optimizers.Param(o, goField); ok {
			names = append(names, fmt.Sprintf("%q", o.Algorithm()))
		}
	}
	return names
}

// algorithmDefaults are the algorithms with their defaults, in the order optimizers.Algorithms
// lists them.
func algorithmDefaults() []optimizers.Optimizer {
	var out []optimizers.Optimizer
	for _, name := range optimizers.Algorithms() {
		o, _ := optimizers.New(name)
		out = append(out, o)
	}
	return out
}

// algorithm is o's name, "" for none.
func algorithm(o optimizers.Optimizer) string {
	if o == nil {
		return ""
	}
	return o.Algorithm()
}

// rangeOf is the Range of the row called name.
func rangeOf(name string) string {
	f, _ := LookupField(name)
	return f.Range
}

func setRecipe(s *Settings, name string) error {
	r, err := Recipe(name)
	if err != nil {
		return &ValueError{Field: "recipe", Value: name, Unknown: true}
	}
	*s = r
	return nil
}

func setDataset(s *Settings, name string) error {
	spec, err := data.SpecByName(name, s.Data.Spec.Labels.String())
	if err != nil {
		return &ValueError{Field: "dataset", Value: name, Err: err}
	}
	s.Data.Spec = spec
	return nil
}

func setLabels(s *Settings, labels string) error {
	spec, err := data.SpecByName(s.Data.Spec.Name, labels)
	if err != nil {
		return &ValueError{Field: "labels", Value: labels, Err: err}
	}
	s.Data.Spec = spec
	return nil
}

func setOptimizer(s *Settings, name string) error {
	o, err := optimizers.New(name)
	if err != nil {
		return &ConfigError{Field: "Optimizer", Value: fmt.Sprintf("%q", name)} // custom says the range
	}
	if algorithm(s.Optimizer) != o.Algorithm() { // the same algorithm keeps its settings (a recipe's)
		s.Optimizer = o
	}
	return nil
}

func getDevices(s *Settings) string {
	if s.Compute.Devices == backends.DevicesAll {
		return "all"
	}
	return strconv.Itoa(s.Compute.Devices)
}

func setDevices(s *Settings, v string) error {
	n, err := backends.ParseDevices(v)
	if err != nil {
		return &ValueError{Field: "devices", Value: v}
	}
	s.Compute.Devices = n
	return nil
}

// augmentationNames are the names of data.Augmentations.
func augmentationNames() []string {
	var names []string
	for _, a := range data.Augmentations() {
		names = append(names, a.String())
	}
	return names
}

// bothAugment: the scheme matters to a resume when both runs augment.
func bothAugment(saved, requested *Settings) bool {
	return saved.Data.Augment && requested.Data.Augment
}

// savedCosine: the cosine's parameters matter to a resume of a cosine run.
func savedCosine(saved, _ *Settings) bool { return saved.Schedule.Name == optimizers.ScheduleCosine }
