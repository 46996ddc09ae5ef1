package training

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"
)

// Diff lists the parts of k that differ from o's, each as "NAME VALUE, not OTHER" (e.g.
// "batch size 128, not 64"): the backend, dataset, model, head, precision and devices, then the
// settings of Shapes and Constants in table order, named by their Label in Fields. It is why a run of
// key k compiles a program of its own instead of the one kept for o.
func (k ProgramKey) Diff(o ProgramKey) []string {
	var out []string
	a, b := reflect.ValueOf(k.evalProgramKey), reflect.ValueOf(o.evalProgramKey)
	for i := range a.NumField() {
		if x, y := a.Field(i).Interface(), b.Field(i).Interface(); x != y {
			out = append(out, fmt.Sprintf("%s %v, not %v", keyFieldName(a.Type().Field(i).Name), x, y))
		}
	}
	if k.Devices != o.Devices {
		out = append(out, fmt.Sprintf("devices %d, not %d", k.Devices, o.Devices))
	}
	out = append(out, diffSettings(k.Shapes, o.Shapes)...)
	return append(out, diffSettings(k.Constants, o.Constants)...)
}

// diffSettings lists the settings of a that differ from b's (both "name=value" joined by
// keySep), named by their Label.
func diffSettings(a, b string) []string {
	other := map[string]string{}
	for _, kv := range strings.Split(b, keySep) {
		name, value, _ := strings.Cut(kv, "=")
		other[name] = value
	}
	var out []string
	for _, kv := range strings.Split(a, keySep) {
		name, value, _ := strings.Cut(kv, "=")
		if was, ok := other[name]; ok && was == value || kv == "" {
			continue
		}
		label := name
		if f, err := LookupField(name); err == nil && f.Label != "" {
			label = f.Label
		}
		out = append(out, fmt.Sprintf("%s %s, not %s", label, value, other[name]))
	}
	return out
}

// reason says why a run of key compiles its train step: ReasonFirst when p keeps no programs,
// else how key differs from the kept key nearest to it (fewest differences), or that the
// programs of key are in use by another run.
func (p *Programs) reason(key ProgramKey) string {
	if p == nil {
		return ReasonFirst
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.sets[key]; s != nil && s.inUse {
		return "the kept one is in use by another run"
	}
	var nearest []string
	for k := range p.sets {
		if d := key.Diff(k); nearest == nil || len(d) < len(nearest) {
			nearest = d
		}
	}
	if len(nearest) == 0 {
		return ReasonFirst
	}
	return "new program: " + strings.Join(nearest, "; ")
}

// keyFieldName writes a ProgramKey field's name in words: "Precision" is "precision".
func keyFieldName(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
