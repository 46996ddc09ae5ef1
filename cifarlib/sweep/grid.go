package sweep

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// Axis is one setting of a grid (a name of training.Fields: the flags of `cifarlab train`) and
// the values it takes, in order: "--grid seed=1,2,3".
type Axis struct {
	Field  string   `json:"field"`
	Values []string `json:"values"`
}

// Setting is one setting, by name, and its value.
type Setting struct {
	Field string `json:"field"`
	Value string `json:"value"`
}

// Reserved are the settings a sweep sets itself (each task's run folder), which a grid, a list,
// the shared or the base settings may therefore not set.
var Reserved = []string{"checkpoint"}

// valueRE is what a value may hold: it becomes part of a run folder's name.
var valueRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// ParseAxis parses one --grid: "flag=v1,v2,...". The values must be distinct and may hold
// letters, digits and ._- only (they become part of the run folders' names).
func ParseAxis(s string) (Axis, error) {
	name, values, ok := strings.Cut(s, "=")
	name = strings.TrimLeft(strings.TrimSpace(name), "-")
	if !ok || name == "" {
		return Axis{}, &GridError{Arg: s, Problem: "is not FLAG=V1,V2,...", Fix: "write e.g. --grid seed=1,2,3"}
	}
	a := Axis{Field: name}
	for v := range strings.SplitSeq(values, ",") {
		v = strings.TrimSpace(v)
		if err := checkValue(s, v); err != nil {
			return Axis{}, err
		}
		if slices.Contains(a.Values, v) {
			return Axis{}, &GridError{Arg: s, Problem: fmt.Sprintf("has the value %q twice", v), Fix: "list each value once"}
		}
		a.Values = append(a.Values, v)
	}
	return a, nil
}

// ParseList parses one --list entry: one task's settings, "flag=value flag=value ...".
func ParseList(s string) ([]Setting, error) {
	var out []Setting
	for field := range strings.FieldsSeq(s) {
		name, v, ok := strings.Cut(field, "=")
		name = strings.TrimLeft(name, "-")
		if !ok || name == "" {
			return nil, &GridError{Arg: s, Problem: fmt.Sprintf("has %q, not FLAG=VALUE", field), Fix: "write e.g. --list 'seed=1 lr=0.1'"}
		}
		if err := checkValue(s, v); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(o Setting) bool { return o.Field == name }) {
			return nil, &GridError{Arg: s, Problem: "sets --" + name + " twice", Fix: "set each flag once per task"}
		}
		out = append(out, Setting{name, v})
	}
	if len(out) == 0 {
		return nil, &GridError{Arg: s, Problem: "is empty", Fix: "write e.g. --list 'seed=1 lr=0.1'"}
	}
	return out, nil
}

func checkValue(arg, v string) error {
	if v == "" {
		return &GridError{Arg: arg, Problem: "has an empty value", Fix: "remove the extra comma or give the value"}
	}
	if !valueRE.MatchString(v) || v == "." || v == ".." {
		return &GridError{Arg: arg, Problem: fmt.Sprintf("has the value %q, which cannot be part of a run folder's name", v),
			Fix: "use letters, digits and . _ - only; set paths and other values once, outside the grid"}
	}
	return nil
}

// combinations expands the grid: every combination of the axes' values, the last axis
// varying fastest, followed by the list's tasks.
func combinations(grid []Axis, list [][]Setting) [][]Setting {
	var out [][]Setting
	if len(grid) > 0 {
		out = [][]Setting{nil}
		for _, a := range grid {
			var next [][]Setting
			for _, prefix := range out {
				for _, v := range a.Values {
					next = append(next, append(slices.Clone(prefix), Setting{a.Field, v}))
				}
			}
			out = next
		}
	}
	return append(out, list...)
}

// checkShared checks spec's shared settings: settings (checkField) that the base settings take
// (training.Settings.Apply).
func checkShared(spec Spec) error {
	given := map[string]string{}
	for _, st := range spec.Shared {
		if err := checkField("the shared flags", st.Field); err != nil {
			return err
		}
		given[st.Field] = st.Value
	}
	if err := spec.Base.Apply(given); err != nil {
		return &GridError{Arg: "the shared flags", Problem: "are refused by `cifarlab train`", Err: err, Fix: "fix the flags"}
	}
	return nil
}

// checkAxis checks axis a of spec's grid: a setting (checkField) with values, each of which its
// row of the table takes (training.Settings.Apply on the base and shared settings: its parsing
// and range), so that a value the setting does not take is refused by its axis, before any task.
func checkAxis(spec Spec, a Axis) error {
	where := "--grid " + a.Field
	if err := checkField(where, a.Field); err != nil {
		return err
	}
	if len(a.Values) == 0 {
		return &GridError{Arg: where, Problem: "has no values", Fix: "give at least one value"}
	}
	for _, v := range a.Values {
		s, given := spec.Base, map[string]string{a.Field: v}
		for _, st := range spec.Shared {
			if st.Field != a.Field {
				given[st.Field] = st.Value
			}
		}
		if err := s.Apply(given); err != nil {
			return &GridError{Arg: where, Problem: "has a value the setting does not take", Err: err, Fix: "fix the value"}
		}
	}
	return nil
}

// checkField refuses a setting that is not one of training.Fields, or one the sweep sets itself
// (Reserved), naming where it came from; the error of an unknown one lists those there are.
func checkField(where, name string) error {
	if slices.Contains(Reserved, name) {
		return &GridError{Arg: where, Problem: "sets " + name + ", which the sweep sets for each task",
			Fix: "leave it out: each task trains into its own folder of the runs folder"}
	}
	if _, err := training.LookupField(name); err != nil {
		var names []string
		for _, n := range training.FieldNames() {
			if !slices.Contains(Reserved, n) {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		return &GridError{Arg: where, Problem: fmt.Sprintf("names %q, which is not a setting of `cifarlab train`", name),
			Fix: "use one of " + strings.Join(names, ", ")}
	}
	return nil
}
