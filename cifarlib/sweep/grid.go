package sweep

import (
	"flag"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Axis is one flag of a grid and the values it takes, in order: "--grid seed=1,2,3".
type Axis struct {
	Flag   string   `json:"flag"`
	Values []string `json:"values"`
}

// Setting is one flag and its value.
type Setting struct {
	Flag  string `json:"flag"`
	Value string `json:"value"`
}

// Reserved are the train flags a sweep sets itself (each task's run folder, no progress bar)
// and which a grid, a list or the shared flags may therefore not set.
var Reserved = []string{"checkpoint", "json", "progress"}

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
	a := Axis{Flag: name}
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
		if slices.ContainsFunc(out, func(o Setting) bool { return o.Flag == name }) {
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
					next = append(next, append(slices.Clone(prefix), Setting{a.Flag, v}))
				}
			}
			out = next
		}
	}
	return append(out, list...)
}

// checkFlags refuses a setting of a flag the train command does not have, or one the sweep
// sets itself (Reserved), naming where it came from.
func checkFlags(fs *flag.FlagSet, where, name string) error {
	if slices.Contains(Reserved, name) {
		return &GridError{Arg: where, Problem: "sets --" + name + ", which the sweep sets for each task",
			Fix: "leave --" + name + " out: each task trains into its own folder of --runs"}
	}
	if fs.Lookup(name) == nil {
		var names []string
		fs.VisitAll(func(f *flag.Flag) {
			if !slices.Contains(Reserved, f.Name) {
				names = append(names, f.Name)
			}
		})
		sort.Strings(names)
		return &GridError{Arg: where, Problem: "names --" + name + ", which is not a flag of `" + fs.Name() + "`",
			Fix: "use one of " + strings.Join(names, ", ")}
	}
	return nil
}

// FlagParams are the flags set in fs (after Parse), by name, without Reserved: the
// hyperparameters of a train command line, as run.json records them (TrainConfig.Params).
func FlagParams(fs *flag.FlagSet) map[string]string {
	params := map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		if !slices.Contains(Reserved, f.Name) {
			params[f.Name] = f.Value.String()
		}
	})
	return params
}
