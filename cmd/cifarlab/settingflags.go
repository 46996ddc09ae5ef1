package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// The flags of the settings are said here, from the table (training.Fields): a row's name is
// its flag, its usage names other settings in braces, which become flags ({from} is --from),
// its values (Range, Choices) make the flag's help and the synopsis. The library knows no flag.

// settingRef is a setting named in a row's usage.
var settingRef = regexp.MustCompile(`\{([a-z0-9-]+)\}`)

// flagUsage is a row's usage with the settings it names said as flags.
func flagUsage(usage string) string { return settingRef.ReplaceAllString(usage, "--$1") }

// flagArg is what the synopsis writes after a setting's flag: its choices ("f32|bf16-mixed"),
// else the name its usage gives the value in back quotes, as the flag package reads it,
// upper-cased ("DIR"), else VALUE; "" for a boolean.
func flagArg(f *training.Field) string {
	var said []string
	for _, c := range f.Choices {
		if c != "" {
			said = append(said, c)
		}
	}
	if len(said) > 0 {
		return strings.Join(said, "|")
	}
	switch name, _ := flag.UnquoteUsage(&flag.Flag{Usage: f.Usage, Value: &settingFlag{field: f}}); {
	case f.IsBool():
	case name == "value" || name == "":
		return "VALUE"
	case strings.Contains(name, "|"):
		return name
	default:
		return strings.ToUpper(name)
	}
	return ""
}

// synopsis writes the flags of the settings fields (by name) that have an argument, in the
// table's order, each as [--name ARG].
func synopsis(names ...string) string {
	var parts []string
	for _, f := range training.Fields() {
		for _, name := range names {
			if f.Name == name {
				parts = append(parts, "[--"+f.Name+" "+flagArg(f)+"]")
			}
		}
	}
	return strings.Join(parts, " ")
}

// trainSynopsis is the synopsis of "cifarlab train", from the table: the length of the run
// (required, unless a recipe gives it), then every setting with choices or a named value, then
// the command's own flags; the other settings are listed below it.
func trainSynopsis() string {
	var names []string
	for _, f := range training.Fields() {
		if f.Name != "steps" && f.Name != "epochs" && (len(f.Choices) > 0 || flagArg(f) != "VALUE" && !f.IsBool()) {
			names = append(names, f.Name)
		}
	}
	steps, _ := training.LookupField("steps")
	epochs, _ := training.LookupField("epochs")
	return "--steps " + flagArg(steps) + "|--epochs " + flagArg(epochs) + " " + synopsis(names...) +
		" [--json] [--progress auto|on|off] [--SETTING VALUE ...]"
}

// settingFlags defines on fs the flags of the settings names, with their own usage where
// usage has one, else their row's, followed by the row's range (the flag's default is the row's
// in Defaults(), settingFlag.String); the values given go into the trainFlags returned, for
// Settings.Apply.
func settingFlags(fs *flag.FlagSet, usage map[string]string, names ...string) *trainFlags {
	given := &trainFlags{set: map[string]string{}}
	for _, name := range names {
		f, err := training.LookupField(name)
		if err != nil {
			panic(err) // a name of this file
		}
		words := usage[name]
		if words == "" {
			words = f.Usage
		}
		fs.Var(&settingFlag{field: f, flags: given}, name, flagUsage(words)+": "+f.Range)
	}
	return given
}

// roleHeads are the heads of the groups of settings in the help, by role.
var roleHeads = []struct {
	role training.Role
	head string
}{
	{training.Shapes, "Settings that shape the compiled programs (a change compiles another program):"},
	{training.Fed, "Settings fed to the programs as they run (a change compiles nothing):"},
	{training.Host, "Settings of the host alone (no program holds them):"},
}

// printByRole prints the flags of fs: the settings' flags grouped by their role, each group under
// its head, then the command's own flags.
func printByRole(fs *flag.FlagSet, w io.Writer) {
	groups := map[training.Role]*flag.FlagSet{}
	own := flag.NewFlagSet("", flag.ContinueOnError)
	fs.VisitAll(func(fl *flag.Flag) {
		target := own
		if sf, ok := fl.Value.(*settingFlag); ok {
			if groups[sf.field.Role] == nil {
				groups[sf.field.Role] = flag.NewFlagSet("", flag.ContinueOnError)
			}
			target = groups[sf.field.Role]
		}
		target.Var(fl.Value, fl.Name, fl.Usage)
		target.Lookup(fl.Name).DefValue = fl.DefValue
	})
	for _, rh := range roleHeads {
		if g := groups[rh.role]; g != nil {
			fmt.Fprintln(w, rh.head)
			g.SetOutput(w)
			g.PrintDefaults()
		}
	}
	fmt.Fprintln(w, "The command:")
	own.SetOutput(w)
	own.PrintDefaults()
}
