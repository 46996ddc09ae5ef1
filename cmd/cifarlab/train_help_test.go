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
	t.Helper()
	var stdout, stderr bytes.Buffer
	require.Zero(t, run(append([]string{"train"}, args...), &stdout, &stderr), stderr.String())
	flags = map[string]string{}
	name := ""
	for _, line := range strings.Split(stdout.String(), "\n") {
		switch {
		case strings.HasPrefix(line, "  -"):
			name = strings.Fields(line)[0][1:]
		case name != "":
			flags[name] += strings.TrimSpace(line) + " "
		default:
			head += line + "\n"
		}
	}
	return flags, head
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
