package training

import (
	"fmt"
	"slices"
	"strings"
)

// Role says what a setting is to the compiled programs: ProgramKey is made of the Shapes
// and Fed settings. Each row of Fields says its own (`cifarlab train -h` lists the settings by
// role).
type Role int

const (
	// Shapes: it decides a compiled program's shape or structure: changing it compiles another
	// program.
	Shapes Role = iota + 1
	// Fed: a numeric hyper-parameter that the programs read at run time (optimizers.Scalar):
	// changing it compiles nothing. Where a fed value would change the numbers XLA computes, the
	// program holds it as a constant all the same, and it is in ProgramKey (the row's keyed rule).
	Fed
	// Host: nothing any program holds (folders, periods, what the host does between steps, such
	// as the training data's augmentation, which the host applies to each batch before the step).
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
// is the flag of `cifarlab train`, a sweep's axis and a key of run.json's settings. A row holds
// what the setting takes, as data (its values, said by Range and Choices), and takes its
// default from the settings a run starts from (Default): Set, Validate, a sweep's axes and the
// flags' help and synopsis all come from it.
type Field struct {
	// Name is the setting's name, e.g. "lr"; Path the Settings field it sets, e.g.
	// "Optimizer.LearningRate" (ConfigError.Field); Label its name in words ("learning rate").
	Name, Path, Label string
	// Usage says what it does, naming other settings by name in braces, e.g. "with {from}: the
	// backbone's learning rate": a front end says them in its own words (cmd/cifarlab: --from).
	Usage string
	// Range says, in words, the values it takes (a refused value's error says it), from its
	// values; Choices are those values by name (a name's choices, or the only numbers a setting
	// takes, e.g. the TTA levels), nil for the others.
	Range   string
	Choices []string
	// Role says what it is to the compiled programs.
	Role Role
	// Bookkeeping: it says how a run is kept and watched (where it is written, how often it saves,
	// logs, records and validates), not what it trains: a comparison of runs leaves it out.
	Bookkeeping bool

	// values are what it takes (settings_values.go).
	values values
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
	// number is a numeric setting's value in s (nil for a name, a folder or a boolean), whole
	// when its Go field is an integer.
	number func(*Settings) float64
	whole  bool
	isBool bool
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
	for _, o := range algorithmDefaults() {
		s := Settings{Optimizer: o}
		if v, ok := f.Default(&s); ok {
			out = append(out, [2]string{o.Algorithm(), v})
		}
	}
	return out
}

// Set sets the field in s from value, or returns a *ValueError (a malformed value) or a
// *ConfigError (a value outside the row's Range, or one s cannot take): s is then unchanged.
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
