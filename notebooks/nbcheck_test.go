package notebooks_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cell builds one nbformat 4 code cell with the given outputs, tags and cifarlab expectations.
func cell(count int, tags []string, meta map[string]any, outputs ...map[string]any) map[string]any {
	md := map[string]any{}
	if tags != nil {
		md["tags"] = tags
	}
	if meta != nil {
		md["cifarlab"] = meta
	}
	if outputs == nil {
		outputs = []map[string]any{}
	}
	var ec any
	if count > 0 {
		ec = count
	}
	return map[string]any{"cell_type": "code", "execution_count": ec, "metadata": md, "outputs": outputs,
		"source": "%%\nfmt.Println(\"x\")"}
}

func stdout(text string) map[string]any {
	return map[string]any{"output_type": "stream", "name": "stdout", "text": text}
}

func stderr(text string) map[string]any {
	return map[string]any{"output_type": "stream", "name": "stderr", "text": text}
}

func errorOutput(value string) map[string]any {
	return map[string]any{"output_type": "error", "ename": "ERROR", "evalue": value, "traceback": []string{value}}
}

func display(mime, data string) map[string]any {
	return map[string]any{"output_type": "display_data", "metadata": map[string]any{}, "data": map[string]any{mime: data}}
}

// writeNotebook writes cells as a notebook into dir and returns its path.
func writeNotebook(t *testing.T, dir, name string, cells ...map[string]any) string {
	t.Helper()
	for i, c := range cells {
		c["id"] = fmt.Sprintf("cell-%d", i)
	}
	nb := map[string]any{"nbformat": 4, "nbformat_minor": 5, "cells": cells,
		"metadata": map[string]any{"kernelspec": map[string]any{"name": cpuKernel, "display_name": "Go", "language": "go"}}}
	data, err := json.Marshal(nb)
	require.NoError(t, err)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// runNBCheck runs nbcheck.py and returns its exit code and output.
func runNBCheck(t *testing.T, python string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(python, append([]string{"nbcheck.py"}, args...)...)
	cmd.Env = notebookEnv(repoRoot(t))
	out, err := cmd.CombinedOutput()
	if err == nil {
		return 0, string(out)
	}
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "nbcheck did not run: %s", out)
	return exitErr.ExitCode(), string(out)
}

// TestNBCheckFindsProblems checks nbcheck.py's rules on notebooks with hand-made outputs
// (--check-only: no kernel): each kind of problem is reported with its own message (including an
// expectation that checks a float to more digits than it holds across CPUs), and a notebook that
// meets every expectation passes.
func TestNBCheckFindsProblems(t *testing.T) {
	repo := repoRoot(t)
	python := filepath.Join(repo, ".venv", "bin", "python")
	need(t, fileExists(python), "the Python venv "+filepath.Join(repo, ".venv"), "run kernel/setup.sh")
	dir := t.TempDir()

	good := writeNotebook(t, dir, "good.ipynb",
		cell(1, nil, map[string]any{"expect": []any{
			"labels >= 10: 58 of 64",
			map[string]any{"regex": `labels >= 10: (\d+) of \d+ examples; exactly 0 for (\d+)`, "equal_groups": []int{1, 2}},
			map[string]any{"regex": `accuracy ([0-9.]+)%`, "min": 30, "max": 100},
			map[string]any{"regex": `\(chance: 1\.0%\)`},
			map[string]any{"text": "mean 0.4914", "exact": "CIFAR-10's published channel mean, a constant"},
		}}, stdout("labels >= 10: 58 of 64 examples; exactly 0 for 58\ntest accuracy 71.5% (chance: 1.0%)\nmean 0.4914\n")),
		cell(2, []string{"raises-exception"}, map[string]any{"expect": []any{"set the head to 100", "panic: model head has 10 outputs"}},
			stdout("partial output\n"), stderr("panic: "), stderr("model head has 10 outputs ... or set the head to 100\n"),
			errorOutput("exit status 2")),
		cell(3, nil, map[string]any{"expect": []any{
			map[string]any{"mime": "image/svg+xml", "count_min": 1},
			"head: 10 outputs != 100 classes",
		}}, display("image/svg+xml", "<svg/>"), display("text/html", "<p>head: 10 outputs &#33;= 100 classes</p>")),
	)
	code, out := runNBCheck(t, python, "--check-only", good)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "PASS "+good)

	bad := writeNotebook(t, dir, "bad.ipynb",
		cell(1, nil, map[string]any{"expect": []any{"this text is missing"}}, stdout("something else\n")),
		cell(2, nil, nil, errorOutput("exit status 2")),
		cell(3, []string{"raises-exception"}, nil, stdout("no error here\n")),
		cell(4, nil, map[string]any{"expect": []any{map[string]any{"regex": `accuracy ([0-9.]+)%`, "min": 30}}}, stdout("test accuracy 9.3%\n")),
		cell(5, nil, map[string]any{"expect": []any{map[string]any{"regex": `(\d+) of 64; zero for (\d+)`, "equal_groups": []int{1, 2}}}},
			stdout("58 of 64; zero for 57\n")),
		cell(6, nil, map[string]any{"forbid": []any{"WARNING"}, "expect": []any{map[string]any{"mime": "image/png"}}}, stdout("WARNING: 90%\n")),
		cell(0, nil, nil),
		cell(7, nil, map[string]any{"expect": []any{"test accuracy 71.5%", map[string]any{"regex": `loss 2\.3026`}}},
			stdout("test accuracy 71.5%\nloss 2.3026\n")),
	)
	code, out = runNBCheck(t, python, "--check-only", bad)
	require.Equal(t, 1, code, out)
	for _, want := range []string{
		"FAIL " + bad,
		"expected text not found: 'this text is missing'",
		"unexpected error output: ERROR: exit status 2",
		"tagged 'raises-exception' but produced no error output",
		"'accuracy 9.3%': 9.3 is below the floor 30",
		"group 1 (58) != group 2 (57)",
		"forbidden text present: 'WARNING'",
		"expected at least 1 output(s) of type image/png, found 0",
		"not executed (no execution count and no outputs)",
		"expectation 'test accuracy 71.5%' checks 71.5 to 3 digits, more than a float holds across CPUs",
		"checks 2.3026 to 5 digits",
	} {
		require.Contains(t, out, want)
	}
	require.Equal(t, 8, strings.Count(out, "  BAD cell"), out)
}

// TestNBCheckWithKernel runs nbcheck.py on a small notebook with the real GoNB kernel: a cell
// that prints, a tagged cell that fails as expected, then a cell that outruns the per-cell
// timeout, which must be reported as such (and stop the run) rather than hang.
func TestNBCheckWithKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the GoNB kernel; skipped with -short")
	}
	repo := repoRoot(t)
	python := venvPython(t, repo)
	dir := t.TempDir()
	nb := writeNotebook(t, dir, "timeout.ipynb",
		map[string]any{"cell_type": "code", "execution_count": nil, "outputs": []any{}, "source": "%%\nfmt.Println(\"hello from GoNB\")",
			"metadata": map[string]any{"cifarlab": map[string]any{"expect": []any{"hello from GoNB"}}}},
		map[string]any{"cell_type": "code", "execution_count": nil, "outputs": []any{}, "source": "%%\nfmt.Fprintln(os.Stderr, \"label 57 is out of range\")\nos.Exit(1)",
			"metadata": map[string]any{"tags": []string{"raises-exception"}, "cifarlab": map[string]any{"expect": []any{"label 57 is out of range"}}}},
		map[string]any{"cell_type": "code", "execution_count": nil, "outputs": []any{}, "source": "%%\ntime.Sleep(5 * time.Minute)", "metadata": map[string]any{}},
		map[string]any{"cell_type": "code", "execution_count": nil, "outputs": []any{}, "source": "%%\nfmt.Println(\"never\")", "metadata": map[string]any{}},
	)
	code, out := runNBCheck(t, python, "--kernel", cpuKernel, "--timeout", "30", "--output-dir", filepath.Join(dir, "out"), nb)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "a cell ran past the per-cell timeout of 30s (cell 2); the run stopped there")
	require.Regexp(t, `BAD cell  2 .*\n +ran past the per-cell timeout of 30s`, out)
	require.Regexp(t, `ok  cell  0 .*\n`, out)
	require.Regexp(t, `ok  cell  1 .* \[raises-exception\]`, out)
	require.Contains(t, out, "not executed (an earlier cell stopped the run)")
}
