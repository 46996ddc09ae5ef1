package training

import (
	"fmt"
	"math"
	"slices"
	"strconv"
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

	// values are what it takes (type values, below).
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

// values are the values a setting takes, as data, written once in its row of the table: the
// row's Range says them in words, Set reads a name by them and Validate refuses a value outside
// them. A setting's values are names (choices), numbers (bounds, whole or not as its Go field),
// or anything of its type (a seed, a folder, a boolean).
type values struct {
	// choices are a name's values, in the order the range says them; unsaid are taken too, but
	// not said (the recipe's "" for none, the model's "source" of a transfer); open: any other
	// name is taken as well, the choices being the usual ones (the backend's GoMLX
	// configurations, which backends.New reads).
	choices, unsaid []string
	open            bool
	// means says what a choice means, where its name does not say it alone.
	means map[string]string
	// A number is in [lo, hi], without lo when loOpen and without hi when hiOpen; hi is +Inf
	// for none. A zero values takes any number.
	lo, hi         float64
	loOpen, hiOpen bool
	// special are numbers taken besides the bounds, each said with its meaning, e.g. the
	// validations' period -1 (never).
	special []special
	// unset: 0 stands for "not given" (the length of a run in steps or in epochs: one of them is).
	unset bool
	// say says the values in words where the type's own do not: "a folder".
	say string
}

// special is a number a setting takes with a meaning of its own: as the user writes it (say,
// e.g. "all" for the devices, else the number) and what it means ("" when said alone).
type special struct {
	value        float64
	say, meaning string
}

// anyValue takes any value of the setting's type.
var anyValue = values{lo: math.Inf(-1), hi: math.Inf(1)}

// atLeast takes the numbers >= lo; above the numbers > lo.
func atLeast(lo float64) values { return values{lo: lo, hi: math.Inf(1)} }
func above(lo float64) values   { return values{lo: lo, loOpen: true, hi: math.Inf(1)} }

// fraction takes the numbers in [0, 1).
var fraction = values{hi: 1, hiOpen: true}

// choices takes the names given, said in that order.
func choices(names ...string) values { return values{choices: names} }

// onlySpecial takes the numbers given, each with its meaning, and no other.
func onlySpecial(special ...special) values { return values{lo: math.Inf(1), special: special} }

// or is v with the number value taken too, meaning what meaning says.
func (v values) or(value float64, meaning string) values {
	v.special = append(slices.Clone(v.special), special{value: value, meaning: meaning})
	return v
}

// orSaid is v with the number value taken too, written say (e.g. "all").
func (v values) orSaid(value float64, say string) values {
	v.special = append(slices.Clone(v.special), special{value: value, say: say})
	return v
}

// meaning is v with the choice name meaning what meaning says.
func (v values) meaning(name, meaning string) values {
	means := map[string]string{name: meaning}
	for k, m := range v.means {
		means[k] = m
	}
	v.means = means
	return v
}

// isName reports whether v are names.
func (v values) isName() bool { return len(v.choices) > 0 }

// said are the values v says by name: a name's choices, or the special numbers of a setting
// that takes no other (the TTA levels); nil otherwise.
func (v values) said() []string {
	if v.isName() {
		return slices.Clone(v.choices)
	}
	if v.lo > v.hi || math.IsInf(v.lo, 1) {
		var out []string
		for _, s := range v.special {
			out = append(out, s.written())
		}
		return out
	}
	return nil
}

// written is how the user writes s.
func (s special) written() string {
	if s.say != "" {
		return s.say
	}
	return strconv.FormatFloat(s.value, 'g', -1, 64)
}

// words says v in words, for a setting whose Go field is whole (an integer) or not: "one of a,
// b, c, d", "a, b or c", "a whole number >= 0", "a number in [0, 1)", "a whole number > 0, 0
// (about 5 times per run) or -1 (never)"; "" for anyValue of a name or a boolean (the row says
// those).
func (v values) words(whole bool) string {
	if v.say != "" {
		return v.say
	}
	if v.isName() {
		return sayChoices(v.choices, v.means)
	}
	var parts []string
	if base := v.bounds(whole); base != "" {
		parts = append(parts, base)
	}
	for _, s := range v.special {
		w := s.written()
		if s.meaning != "" {
			w += " (" + s.meaning + ")"
		}
		parts = append(parts, w)
	}
	return sayList(parts)
}

// bounds says v's bounds: "a whole number > 0", "a number in [0, 1)", "" for none taken.
func (v values) bounds(whole bool) string {
	number := "a number"
	if whole {
		number = "a whole number"
	}
	lo, hi := !math.IsInf(v.lo, -1), !math.IsInf(v.hi, 1)
	switch {
	case v.lo > v.hi || math.IsInf(v.lo, 1):
		return ""
	case lo && hi:
		return fmt.Sprintf("%s in %s%g, %g%s", number, map[bool]string{false: "[", true: "("}[v.loOpen], v.lo, v.hi,
			map[bool]string{false: "]", true: ")"}[v.hiOpen])
	case lo:
		return fmt.Sprintf("%s %s %g", number, map[bool]string{false: ">=", true: ">"}[v.loOpen], v.lo)
	case hi:
		return fmt.Sprintf("%s %s %g", number, map[bool]string{false: "<=", true: "<"}[v.hiOpen], v.hi)
	}
	return number
}

// sayChoices says names: "one of a, b, c, d" for one or more than three, else "a or b", "a, b or
// c"; quoted when one is "" (none); each with what it means, if said.
func sayChoices(names []string, means map[string]string) string {
	said := slices.Clone(names)
	for i, n := range said {
		if slices.Contains(names, "") {
			said[i] = strconv.Quote(n)
		}
		if m := means[n]; m != "" {
			said[i] += " (" + m + ")"
		}
	}
	if len(said) == 1 || len(said) > 3 {
		return "one of " + strings.Join(said, ", ")
	}
	return sayList(said)
}

// sayList joins parts as "a, b or c".
func sayList(parts []string) string {
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

// takesName reports whether v takes the name s.
func (v values) takesName(s string) bool {
	return v.open || slices.Contains(v.choices, s) || slices.Contains(v.unsaid, s)
}

// takesNumber reports whether v takes x.
func (v values) takesNumber(x float64) bool {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return false
	}
	for _, s := range v.special {
		if x == s.value {
			return true
		}
	}
	if v.unset && x == 0 {
		return true
	}
	switch {
	case x < v.lo || v.loOpen && x == v.lo:
		return false
	case x > v.hi || v.hiOpen && x == v.hi:
		return false
	}
	return true
}
