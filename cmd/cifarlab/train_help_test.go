package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/training"

	"github.com/stretchr/testify/require"
)

// trainHelp runs `cifarlab train` with args (a -h among them) and returns each flag's help, by
// flag name, and the lines before the flags.
func trainHelp(t *testing.T, args ...string) (flags map[string]string, head string) {
	flags, head, _ = trainHelpGroups(t, args...)
	return flags, head
}

// trainHelpGroups is trainHelp with the heads of the groups of flags, in order.
func trainHelpGroups(t *testing.T, args ...string) (flags map[string]string, head string, groups []string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	require.Zero(t, run(append([]string{"train"}, args...), &stdout, &stderr), stderr.String())
	flags = map[string]string{}
	name := ""
	for _, line := range strings.Split(stdout.String(), "\n") {
		switch {
		case strings.HasPrefix(line, "  -"):
			name = strings.Fields(line)[0][1:]
		case name != "" && strings.HasPrefix(line, " "):
			flags[name] += strings.TrimSpace(line) + " "
		case name != "": // the head of a group of flags
			groups = append(groups, line)
		default:
			head += line + "\n"
		}
	}
	return flags, head, groups
}

// TestTrainHelpSaysEachDefaultOnce: `cifarlab train -h` says each setting's default once, the
// table's (training.Field.Default of training.Defaults()), an optimizer's setting that the
// default optimizer lacks with the defaults of those that have it; with --recipe (before or
// after -h), the defaults the recipe changes say the value they replace, and a line lists them.
func TestTrainHelpSaysEachDefaultOnce(t *testing.T) {
	flags, _ := trainHelp(t, "-h")
	defaults := training.Defaults()
	for _, field := range training.Fields() {
		help, ok := flags[field.Name]
		require.True(t, ok, "no help for --%s", field.Name)
		require.LessOrEqual(t, strings.Count(help, "(default"), 1, "--%s: %s", field.Name, help)
		if v, ok := field.Default(&defaults); ok && v != "" && field.Name != "recipe" {
			require.Contains(t, help, "(default "+v, "--%s", field.Name)
		}
	}
	require.Contains(t, flags["bias-scaler"], "(default: nesterov's 64)")
	require.Contains(t, flags["momentum"], "(default: nesterov's 0.85)")
	require.Contains(t, flags["weight-decay"], "(default: adamw's 0.004, nesterov's 0.0153)")
	require.Contains(t, flags["lr"], "(default 0.001, adam's; sgd's 0.1, nesterov's 11.5)")
	require.Contains(t, flags["recipe"], "airbench94: model airbench94, batch 1024,")
	require.Contains(t, flags["recipe"], "lr 11.5")

	for _, args := range [][]string{{"--recipe", "airbench94", "-h"}, {"-h", "--recipe=airbench94"}} {
		flags, head := trainHelp(t, args...)
		require.Regexp(t, regexp.MustCompile(`(?m)^--recipe airbench94 changes the defaults of: model, batch, .*\blr\b`), head, "%q", args)
		require.Contains(t, flags["lr"], "(default 11.5 with --recipe airbench94, instead of 0.001)", "%q", args)
		require.Contains(t, flags["batch"], "(default 1024 with --recipe airbench94, instead of 32)", "%q", args)
		require.Contains(t, flags["momentum"], "(default 0.85 with --recipe airbench94; the default optimizer, adam, has none)", "%q", args)
		require.Contains(t, flags["seed"], "(default 0)", "a default the recipe keeps: %q", args)
		for name, help := range flags {
			require.LessOrEqual(t, strings.Count(help, "(default"), 1, "--%s: %s", name, help)
		}
	}
}

// TestTrainHelpFromTheTable: the help of `cifarlab train` comes from the table, never written by
// hand: the synopsis names every setting with choices with those choices (the backend's are the
// row's: auto|cpu|go|cuda, where the hand-written synopsis of f035eac said cpu|cuda|auto), each
// flag's help says its row's range and names other settings as flags, and the flags are grouped
// under the heads of their rows' roles, each group holding the rows of its role and no other.
func TestTrainHelpFromTheTable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Zero(t, run([]string{"train", "-h"}, &stdout, &stderr), stderr.String())
	synopsis, _, _ := strings.Cut(stdout.String(), "\n")
	require.True(t, strings.HasPrefix(synopsis, "usage: cifarlab train --steps STEP|--epochs EPOCHS "), synopsis)
	require.Contains(t, synopsis, " [--backend auto|cpu|go|cuda] ")
	flags, _, _ := trainHelpGroups(t, "-h")
	for _, f := range training.Fields() {
		if len(f.Choices) > 0 {
			require.Contains(t, synopsis, "[--"+f.Name+" ", f.Name)
		}
		if !f.IsBool() {
			require.Contains(t, flags[f.Name], ": "+f.Range, f.Name)
		}
		require.NotContains(t, flags[f.Name], "{", "%s: a setting named in braces is said as a flag", f.Name)
	}
	require.Contains(t, flags["backbone-lr"], "with --from: ")

	// The groups: the flags under each head are the rows of its role.
	inGroup := map[string]string{}
	group := ""
	for _, line := range strings.Split(stdout.String(), "\n") {
		switch {
		case strings.HasPrefix(line, "Settings ") || strings.HasPrefix(line, "The command"):
			group = line
		case strings.HasPrefix(line, "  -"):
			inGroup[strings.Fields(line)[0][1:]] = group
		}
	}
	heads := map[training.Role]string{}
	for _, rh := range roleHeads {
		heads[rh.role] = rh.head
	}
	for _, f := range training.Fields() {
		require.Equal(t, heads[f.Role], inGroup[f.Name], f.Name)
	}
	require.Equal(t, "The command:", inGroup["json"])
}
