package training

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

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
