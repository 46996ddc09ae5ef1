package training

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"
)

// Diff lists the parts of k that differ from o's, each as "NAME VALUE, not OTHER" (e.g.
// "batch size 128, not 64"), in the order of ProgramKey's fields: why a run of key k compiles
// a program of its own instead of the one kept for o.
func (k ProgramKey) Diff(o ProgramKey) []string {
	var out []string
	var walk func(a, b reflect.Value)
	walk = func(a, b reflect.Value) {
		for i := range a.NumField() {
			f := a.Type().Field(i)
			if f.Anonymous {
				walk(a.Field(i), b.Field(i))
				continue
			}
			x, y := a.Field(i).Interface(), b.Field(i).Interface()
			if x != y {
				out = append(out, fmt.Sprintf("%s %v, not %v", keyFieldName(f.Name), x, y))
			}
		}
	}
	walk(reflect.ValueOf(k), reflect.ValueOf(o))
	return out
}

// keyFieldName writes a ProgramKey field's name in words: "LabelSmoothing" is "label smoothing".
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
