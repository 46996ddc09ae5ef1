package training

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// Role says what a setting is to the compiled programs: ProgramKey is made of the Shapes
// and Fed settings.
type Role int

const (
	// Shapes: it decides a compiled program's shape or structure (the architecture and its
	// head, the dataset's classes, the batch, precision, devices, the optimizer's algorithm, the
	// schedule's kind, lookahead, the guards, a linear probe, the TTA level): changing it
	// compiles another program.
	Shapes Role = iota + 1
	// Fed: a numeric hyper-parameter (the learning rate and the schedule's parameters, momentum,
	// weight decay, bias scaler, label smoothing, the length of the run, the seed) that the
	// programs read at run time (train_hyper.go): changing it compiles nothing. Where a fed value
	// would change the numbers XLA computes, the program holds it as a constant all the same,
	// and it is in ProgramKey (the field's keyed rule: label smoothing on or off, and its value
	// in bf16-mixed; AdamW's weight decay).
	Fed
	// Host: nothing any program holds (folders, periods, what the host does between steps, the
	// training data's augmentation, which the host applies to each batch before the step).
	Host
)

// String names the role.
func (r Role) String() string {
	switch r {
	case Shapes:
		return "shapes the program"
	case Fed:
		return "fed to the program"
	case Host:
		return "host only"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// Field is one setting of Settings, in the table (Fields) that every boundary reads: its name
// is the flag of `cifarlab train`, a sweep's axis and a key of run.json's params.
type Field struct {
	// Name is the setting's name, e.g. "lr"; Path the Settings field it sets, e.g.
	// "Optimizer.LearningRate" (ConfigError.Field); Label its name in words ("learning rate").
	Name, Path, Label string
	// Usage says what it does (a flag's help).
	Usage string
	// Range says, in words, the values it takes (a malformed value's error says it).
	Range string
	// Role says what it is to the compiled programs.
	Role Role

	// resume says whether a run resumed from a checkpoint of settings saved must have the same
	// value as requested (nil: never).
	resume func(saved, requested *Settings) bool
	// keyed, for a Fed setting, says what a run of s keys its programs by, when they hold the
	// value as a constant (nil: never).
	keyed func(s *Settings, value string) (key string, ok bool)
	// applies says whether settings s have the setting (nil: always); an optimizer's setting
	// that s's algorithm lacks (momentum under adam) has no value there.
	applies func(*Settings) bool
	get     func(*Settings) string
	set     func(*Settings, string) error
	isBool  bool
}

// Get returns the field's value in s, as Set reads it.
func (f *Field) Get(s *Settings) string { return f.get(s) }

// Default returns the field's value in base, the settings a run starts from (Defaults(), or a
// recipe's: Recipe), as Get writes it; false when base has no such setting (an optimizer's
// setting that base's algorithm lacks, e.g. momentum under adam).
func (f *Field) Default(base *Settings) (string, bool) {
	if f.applies != nil && !f.applies(base) {
		return "", false
	}
	return f.get(base), true
}

// AlgorithmDefaults returns, for a setting of the optimizers, the default of each algorithm that
// has it, in the order OptimizerAlgorithms lists them (e.g. {"nesterov", "0.85"} for momentum);
// nil for the other settings.
func (f *Field) AlgorithmDefaults() [][2]string {
	if f.applies == nil || !strings.HasPrefix(f.Path, "Optimizer.") {
		return nil
	}
	var out [][2]string
	for _, o := range optimizerDefaults {
		s := Settings{Optimizer: o}
		if v, ok := f.Default(&s); ok {
			out = append(out, [2]string{o.Algorithm(), v})
		}
	}
	return out
}

// Set sets the field in s from value, or returns a *ValueError (a malformed value) or a
// *ConfigError (a value s cannot take): s is then unchanged.
func (f *Field) Set(s *Settings, value string) error {
	c := *s
	if err := f.set(&c, strings.TrimSpace(value)); err != nil {
		return err
	}
	*s = c
	return nil
}

// keyedValue is the field's value in the resolved settings s and whether it is part of the
// ProgramKey of a run of s: a Shapes setting always, a Fed one when its keyed rule says so (then
// by the rule's value).
func (f *Field) keyedValue(s *Settings) (string, bool) {
	value := f.get(s)
	switch {
	case f.Role == Shapes:
		return value, true
	case f.Role == Fed && f.keyed != nil:
		return f.keyed(s, value)
	}
	return value, false
}

// IsBool reports whether the field is a boolean (a flag given without a value sets it).
func (f *Field) IsBool() bool { return f.isBool }

// ValueError reports a malformed value of a setting: which setting, the value and its range.
// Unknown is set for a name that is not among the setting's choices; Err is the error of the
// package that read the value (e.g. data's, for a dataset), when there is one.
type ValueError struct {
	Field, Value, Range string
	Unknown             bool
	Err                 error
}

// Error implements error.
func (e *ValueError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("training: setting %s=%q: %v", e.Field, e.Value, e.Err)
	}
	unknown := ""
	if e.Unknown {
		unknown = "unknown "
	}
	return fmt.Sprintf("training: %ssetting %s=%q: use %s", unknown, e.Field, e.Value, e.Range)
}

// Unwrap returns the error of the package that read the value, if any.
func (e *ValueError) Unwrap() error { return e.Err }

// UnknownFieldError reports a setting that does not exist, with the names that do.
type UnknownFieldError struct {
	Name  string
	Names []string
}

// Error implements error.
func (e *UnknownFieldError) Error() string {
	return fmt.Sprintf("training: no setting %q: the settings are %s", e.Name, strings.Join(e.Names, ", "))
}

// Fields returns the table of settings, in the order they apply: a recipe first (it replaces
// the settings), then the dataset before its labels, the optimizer's algorithm before its
// settings, the schedule before its parameters.
func Fields() []*Field { return slices.Clone(fields) }

// FieldNames lists the settings' names, in table order.
func FieldNames() []string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return names
}

// LookupField returns the setting called name, or an *UnknownFieldError.
func LookupField(name string) (*Field, error) {
	for _, f := range fields {
		if f.Name == name {
			return f, nil
		}
	}
	return nil, &UnknownFieldError{Name: name, Names: FieldNames()}
}

// FieldOfPath returns the setting of the Settings field path (e.g. "Data.BatchSize"), or nil.
func FieldOfPath(path string) *Field {
	for _, f := range fields {
		if f.Path == path {
			return f
		}
	}
	return nil
}

// Apply sets the named settings of s from values (name -> value), in table order, or returns
// the first error (an *UnknownFieldError for a name that is not a setting, a *ValueError for a
// malformed value, a *ConfigError for both a length in steps and one in epochs): s is then
// unchanged. A transfer (from) without a model takes the source run's (ArchOfSource).
func (s *Settings) Apply(values map[string]string) error {
	for name := range values {
		if _, err := LookupField(name); err != nil {
			return err
		}
	}
	steps, inSteps := values["steps"]
	if epochs, inEpochs := values["epochs"]; inSteps && inEpochs {
		return &ConfigError{Field: "Run.Steps/Run.Epochs", Value: steps + "/" + epochs, Reason: "give the length of the run once, in steps or in epochs"}
	}
	c := *s
	for _, f := range fields {
		if v, ok := values[f.Name]; ok {
			if err := f.Set(&c, v); err != nil {
				return err
			}
		}
	}
	if _, model := values["model"]; c.Transfer.From != "" && !model {
		c.Model.Arch = ArchOfSource
	}
	*s = c
	return nil
}

// always is the resume rule of the settings a resumed run must keep.
func always(_, _ *Settings) bool { return true }

// fields is the table. Each row binds a name to a Settings field; the values' types come from
// the fields (reflection, as GoMLX's commandline settings take theirs from the defaults).
var fields = []*Field{
	{Name: "recipe", Label: "recipe", Role: Host, Range: "one of " + strings.Join(Recipes(), ", "),
		Usage: "start from a named recipe's settings; the other settings given win over it",
		Path:  "Recipe", get: func(s *Settings) string { return s.Recipe }, set: setRecipe},
	{Name: "dataset", Path: "Data.Spec", Label: "dataset", Role: Shapes, resume: always, Range: `"cifar10" or "cifar100"`,
		Usage: "dataset: cifar10 or cifar100",
		get:   func(s *Settings) string { return s.Data.Spec.Name }, set: setDataset},
	{Name: "labels", Path: "Data.Spec", Label: "labels", Role: Shapes, resume: always, Range: "fine or coarse",
		Usage: "CIFAR-100 label set: fine (100 classes) or coarse (20)",
		get:   func(s *Settings) string { return s.Data.Spec.Labels.String() }, set: setLabels},
	named(bound("model", "Model.Arch", "model", Shapes, always, "one of "+strings.Join(cifarlib.Architectures(), ", "),
		"architecture: "+strings.Join(cifarlib.Architectures(), ", ")+"; with --from the source run's ("+ArchOfSource+") unless given"),
		append(cifarlib.Architectures(), ArchOfSource)...),
	bound("head", "Model.Head", "head", Shapes, always, "a whole number >= 0",
		"override the head width (reproduces the head/label mismatch bug); 0 = the dataset's classes"),
	inverted(bound("guard", "Model.Unguarded", "guard", Shapes, nil, "true or false",
		"guard the loss: refuse a head/dataset mismatch and out-of-range labels; with false, GoMLX's plain loss silently gives such labels zero loss, and the summary says how many")),
	bound("batch", "Data.BatchSize", "batch size", Shapes, always, "a whole number > 0", "batch size (the global batch, across devices)"),
	bound("seed", "Run.Seed", "seed", Fed, always, "a whole number", "seed of the weight initialisation and of the data order"),
	bound("augment", "Data.Augment", "augment", Host, always, "true or false", "augment the training images with the --augmentation scheme"),
	named(bound("augmentation", "Data.Augmentation", "augmentation", Host, bothAugment, strings.Join(augmentationNames(), " or "),
		"the scheme of --augment: crop-flip (random crops with 4-pixel padding and random flips) or altflip-translate (airbench's alternating flip and 2-pixel translation)"),
		augmentationNames()...),
	{Name: "optimizer", Path: "Optimizer", Label: "optimizer", Role: Shapes, resume: always, Range: "one of " + strings.Join(OptimizerAlgorithms(), ", "),
		Usage: "optimizer: adam, adamw, adamax, rmsprop, sgd or nesterov (airbench94's Nesterov SGD with decoupled learning rate and weight decay per 1024 examples); another algorithm than the recipe's takes its own defaults",
		get:   func(s *Settings) string { return algorithm(s.Optimizer) }, set: setOptimizer},
	optimizerField("lr", "LearningRate", "learning rate", "a number >= 0",
		"learning rate (nesterov's: per 1024 examples)"),
	keyedWhen(optimizerField("weight-decay", "WeightDecay", "weight decay", "a number >= 0",
		"weight decay: adamw's, or nesterov's per 1024 examples"),
		func(s *Settings) bool { return algorithm(s.Optimizer) == "adamw" }), // GoMLX's Adam builds it in

	optimizerField("momentum", "Momentum", "momentum", "a number in [0, 1)", "nesterov's momentum"),
	optimizerField("bias-scaler", "BiasScaler", "bias scaler", "a number >= 0",
		"nesterov: the batch-norm biases' learning rate is --lr times this"),
	optimizerField("whiten-bias-epochs", "WhitenBiasEpochs", "whitening bias epochs", "a whole number >= 0",
		"nesterov with --model airbench94: train the whitening bias for this many epochs, then freeze it (0: throughout)"),
	withKey(bound("label-smoothing", "Run.LabelSmoothing", "label smoothing", Fed, always, "a number in [0, 1)",
		"label smoothing of the training loss, in [0, 1) (0: none)"), smoothingKey),
	bound("lookahead", "Run.Lookahead", "lookahead", Shapes, always, "true or false",
		"airbench's lookahead: an EMA of the weights and batch-norm statistics that the weights are reset to every 5 steps, and the run ends on"),
	named(bound("schedule", "Schedule.Name", "schedule", Shapes, always, `"constant", "cosine" or "triangle"`,
		"learning-rate schedule: constant, cosine or triangle (airbench's: 0.2x rising to 1x at 23% of the steps, then down to 0.07x)"),
		ScheduleConstant, ScheduleCosine, ScheduleTriangle),
	bound("warmup", "Schedule.WarmupSteps", "warmup steps", Fed, savedCosine, "a whole number >= 0", "linear warm-up steps (cosine schedule)"),
	bound("min-lr", "Schedule.MinLearningRate", "min learning rate", Fed, savedCosine, "a number >= 0", "final learning rate of the cosine schedule"),
	lengthField(bound("steps", "Run.Steps", "steps", Fed, nil, "a whole number > 0",
		"train up to this global `step` (this or --epochs is required, unless --recipe); a resumed run continues to it")),
	lengthField(bound("epochs", "Run.Epochs", "epochs", Fed, nil, "a number > 0",
		"instead of --steps: train this many `epochs` (may be fractional; ceil(epochs * train examples / batch) steps, the last partial batch of each epoch dropped)")),
	bound("from", "Transfer.From", "transfer source", Host, always, "a run's folder",
		"transfer from the trained run in `RUN_DIR` (its --checkpoint directory): its backbone is carried bit for bit, its head too when --dataset has the run's number of classes (else the head is new at --dataset's width), the optimizer state and step start again; --model defaults to the run's"),
	named(bound("freeze", "Transfer.Freeze", "freeze", Shapes, always, `"" or "backbone"`,
		"with --from: \"backbone\" trains the head only (linear probe; the backbone's weights and batch-norm statistics stay as carried)")),
	keyedWhen(bound("backbone-lr", "Transfer.BackboneLearningRate", "backbone learning rate", Fed, always, "a number >= 0",
		"with --from: the backbone's learning rate when fine-tuning (0: --lr)"),
		func(s *Settings) bool { return s.Transfer.From != "" }), // backboneRateOptimizer's ratio
	bound("new-head", "Transfer.NewHead", "new head", Host, nil, "true or false",
		"with --from: initialise the head afresh from --seed even when --dataset has the run's number of classes"),
	bound("tta", "Eval.TTA", "TTA", Shapes, nil, "0 (none), 1 (mirror) or 2 (mirror and translate)",
		"test-time augmentation of the final evaluation: 0 none, 1 mirror, 2 mirror and translate"),
	bound("eval-every", "Eval.Every", "eval every", Host, nil, "a whole number > 0, 0 (about 5 times per run) or -1 (never)",
		"evaluate on the test split every N steps while training (0: about 5 times per run; -1: only at the end)"),
	bound("eval-examples", "Eval.Examples", "eval examples", Host, nil, "a whole number >= 0",
		"test examples of each evaluation while training (0: the whole test split)"),
	bound("eval-batch", "Eval.BatchSize", "eval batch size", Shapes, nil, "a whole number > 0", "batch size of the evaluations"),
	bound("no-eval", "Eval.SkipFinal", "no final evaluation", Host, nil, "true or false", "skip the final evaluation on the test split"),
	bound("data", "Data.Dir", "data folder", Host, nil, "a folder",
		"CIFAR data `DIR` (the folder holding the dataset's folder, or its synthetic/ sub-folder) ($"+data.DirEnv+")"),
	bound("checkpoint", "Checkpoint.Dir", "checkpoint folder", Host, nil, "a folder",
		"checkpoint `DIR`: saved at the end, on SIGINT and every --checkpoint-every steps; if it holds a checkpoint, training resumes from it"),
	bound("checkpoint-every", "Checkpoint.Every", "checkpoint every", Host, nil, "a whole number >= 0",
		"also save a checkpoint every N steps (0: only at the end or on interrupt)"),
	bound("checkpoint-keep", "Checkpoint.Keep", "checkpoints kept", Host, nil, "a whole number > 0", "the number of checkpoints kept"),
	named(bound("backend", "Compute.Backend", "backend", Shapes, nil, "auto, cpu, go or cuda", "compute backend: auto, cpu, go or cuda")),
	{Name: "devices", Path: "Compute.Devices", Label: "devices", Role: Shapes, Range: "a positive number or all",
		Usage: "data parallelism: shard each batch across N devices, or all (cpu: XLA CPU devices, made on request; cuda: the GPUs); --batch must be a multiple of N",
		get:   getDevices, set: setDevices},
	named(bound("precision", "Compute.Precision", "precision", Shapes, nil, strings.Join(cifarlib.Precisions(), " or "),
		"what convolutions and matrix products compute in: f32, or bf16-mixed (bfloat16 products, float32 weights, loss, guards and checkpoints; the speed-up is on a GPU)"),
		cifarlib.Precisions()...),
	bound("history-every", "Record.HistoryEvery", "history every", Host, nil, "a whole number >= 0",
		"record a history point every N steps (0: at most 200 points per run)"),
	bound("log-every", "Record.LogEvery", "log every", Host, nil, "a whole number >= 0",
		"write a progress line to stderr every N steps (0: at most 200 lines per run)"),
}

// bound is the row of the Settings field at path (Part.Field), read and written by its Go type.
func bound(name, path, label string, role Role, resume func(saved, requested *Settings) bool, rng, usage string) *Field {
	f := &Field{Name: name, Path: path, Label: label, Role: role, resume: resume, Range: rng, Usage: usage}
	f.isBool = settingsField(&Settings{}, path).Kind() == reflect.Bool
	f.get = func(s *Settings) string { return formatValue(settingsField(s, path)) }
	f.set = func(s *Settings, v string) error {
		if err := parseValue(settingsField(s, path), v); err != nil {
			return &ValueError{Field: name, Value: v, Range: rng}
		}
		return nil
	}
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

// inverted is f with its boolean read the other way round (the flag --guard sets
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
// (unless 0): a run's length is given once.
func lengthField(f *Field) *Field {
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

// named is f, whose values are names: read in lower case, one of choices when given.
func named(f *Field, choices ...string) *Field {
	set := f.set
	f.set = func(s *Settings, v string) error {
		if v = strings.ToLower(v); len(choices) > 0 && !slices.Contains(choices, v) {
			return &ValueError{Field: f.Name, Value: v, Range: f.Range, Unknown: true}
		}
		return set(s, v)
	}
	return f
}

// optimizerField is the row of an optimizer's setting (the Go field of the algorithms that
// have it), which the other algorithms leave at zero.
func optimizerField(name, goField, label, rng, usage string) *Field {
	f := &Field{Name: name, Path: "Optimizer." + goField, Label: label, Role: Fed, resume: always, Range: rng, Usage: usage}
	f.applies = func(s *Settings) bool { _, ok := optimizerParam(s.Optimizer, goField); return ok }
	f.get = func(s *Settings) string {
		v, _ := optimizerParam(s.Optimizer, goField)
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	f.set = func(s *Settings, v string) error {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || goField == "WhitenBiasEpochs" && x != math.Trunc(x) {
			return &ValueError{Field: name, Value: v, Range: rng}
		}
		o, ok := withOptimizerParam(s.Optimizer, goField, x)
		if !ok && x != 0 {
			return &ConfigError{Field: f.Path, Value: v, Reason: fmt.Sprintf("%s needs Optimizer %s", label, strings.Join(algorithmsWith(goField), " or "))}
		}
		s.Optimizer = o
		return nil
	}
	return f
}

// algorithmsWith lists the algorithms that have the setting goField.
func algorithmsWith(goField string) []string {
	var names []string
	for _, o := range optimizerDefaults {
		if _, ok := optimizerParam(o, goField); ok {
			names = append(names, fmt.Sprintf("%q", o.Algorithm()))
		}
	}
	return names
}

// algorithm is o's name, "" for none.
func algorithm(o Optimizer) string {
	if o == nil {
		return ""
	}
	return o.Algorithm()
}

func setRecipe(s *Settings, name string) error {
	r, err := Recipe(name)
	if err != nil {
		return &ValueError{Field: "recipe", Value: name, Range: "one of " + strings.Join(Recipes(), ", "), Unknown: true}
	}
	*s = r
	return nil
}

func setDataset(s *Settings, name string) error {
	spec, err := data.SpecByName(name, s.Data.Spec.Labels.String())
	if err != nil {
		return &ValueError{Field: "dataset", Value: name, Range: `"cifar10" or "cifar100"`, Err: err}
	}
	s.Data.Spec = spec
	return nil
}

func setLabels(s *Settings, labels string) error {
	spec, err := data.SpecByName(s.Data.Spec.Name, labels)
	if err != nil {
		return &ValueError{Field: "labels", Value: labels, Range: "fine or coarse", Err: err}
	}
	s.Data.Spec = spec
	return nil
}

func setOptimizer(s *Settings, name string) error {
	o, err := NewOptimizer(name)
	if err != nil {
		return err // a *ConfigError of Optimizer, which lists the algorithms
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
		return &ValueError{Field: "devices", Value: v, Range: "a positive number or all"}
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
func savedCosine(saved, _ *Settings) bool { return saved.Schedule.Name == ScheduleCosine }
