package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// usage prints the help of "cifarlab train": the synopsis, then each flag with its range and its
// default said once, from the settings' table (training.Field.Range, and Field.Default of
// Defaults()), grouped by what the setting is to the compiled programs (training.Role): with
// --recipe given (before or after -h), the defaults the recipe changes say so, and a line lists
// them.
func (f *trainFlags) usage(fs *flag.FlagSet, synopsis string, stdout io.Writer) {
	fmt.Fprintf(stdout, "usage: cifarlab train %s\n", synopsis)
	defaults, recipe := training.Defaults(), f.recipe
	if v, ok := f.set["recipe"]; ok {
		recipe = v
	}
	base, err := training.Recipe(recipe)
	if err != nil {
		fmt.Fprintf(stdout, "(--recipe %q: %v)\n", recipe, err)
		recipe, base = "", defaults
	}
	recipe = strings.ToLower(strings.TrimSpace(recipe))
	if recipe != "" {
		fmt.Fprintf(stdout, "--recipe %s changes the defaults of: %s\n", recipe, strings.Join(changedBy(defaults, base), ", "))
	}
	fs.VisitAll(func(fl *flag.Flag) {
		sf, ok := fl.Value.(*settingFlag)
		if !ok {
			return
		}
		fl.DefValue = "" // said in the usage, once
		fl.Usage = flagUsage(sf.field.Usage)
		if !sf.field.IsBool() {
			fl.Usage += ": " + sf.field.Range
		}
		if sf.field.Name == "recipe" {
			fl.Usage += recipesNote(&defaults)
			return
		}
		fl.Usage += defaultNote(sf.field, &defaults, &base, recipe)
	})
	printByRole(fs, stdout)
}

// changedBy lists the settings whose default base (a recipe's settings) changes from defaults.
func changedBy(defaults, base training.Settings) []string {
	var names []string
	for _, field := range training.Fields() {
		d, dok := field.Default(&defaults)
		r, rok := field.Default(&base)
		if field.Name != "recipe" && (d != r || dok != rok) {
			names = append(names, field.Name)
		}
	}
	return names
}

// defaultNote is what a flag's help says of its default: its value in base (Defaults(), or the
// recipe's settings), and with a recipe that changes it, the default it replaces; for a setting of
// the optimizers, the other algorithms' defaults.
func defaultNote(field *training.Field, defaults, base *training.Settings, recipe string) string {
	d, dok := field.Default(defaults)
	r, rok := field.Default(base)
	switch {
	case recipe != "" && (d != r || dok != rok) && rok:
		instead := ", instead of " + d
		if !dok {
			instead = fmt.Sprintf("; the default optimizer, %s, has none", defaults.Optimizer.Algorithm())
		}
		return fmt.Sprintf(" (default %s with --recipe %s%s)", r, recipe, instead)
	case !rok:
		return " (default: " + algorithmDefaults(field, "\x00") + ")"
	case field.IsBool() || r == "":
		return map[bool]string{true: " (default " + r + ")", false: ""}[r != ""]
	}
	others := algorithmDefaults(field, r)
	if others != "" {
		return fmt.Sprintf(" (default %s, %s's; %s)", r, base.Optimizer.Algorithm(), others)
	}
	return " (default " + r + ")"
}

// algorithmDefaults says the defaults of the optimizers that have field ("nesterov's 0.85"),
// other than same.
func algorithmDefaults(field *training.Field, same string) string {
	var parts []string
	for _, a := range field.AlgorithmDefaults() {
		if a[1] != same {
			parts = append(parts, a[0]+"'s "+a[1])
		}
	}
	return strings.Join(parts, ", ")
}

// recipesNote says what each recipe sets: the settings it changes from Defaults(), with their
// values (the table's, as --recipe NAME -h says them).
func recipesNote(defaults *training.Settings) string {
	var parts []string
	for _, name := range training.Recipes() {
		r, err := training.Recipe(name)
		if err != nil {
			continue
		}
		var set []string
		for _, changed := range changedBy(*defaults, r) {
			if field, err := training.LookupField(changed); err == nil {
				v, _ := field.Default(&r)
				set = append(set, changed+" "+v)
			}
		}
		parts = append(parts, name+": "+strings.Join(set, ", "))
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// recipeArg is the value of --recipe in args, if given: the help says the recipe's defaults even
// when -h comes before it.
func recipeArg(args []string) string {
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case a == "--" || !strings.HasPrefix(a, "-"):
			continue
		case name == "recipe" && hasValue:
			return value
		case name == "recipe" && i+1 < len(args):
			return args[i+1]
		}
	}
	return ""
}
