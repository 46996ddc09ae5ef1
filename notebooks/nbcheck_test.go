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
	return runInNotebookEnv(t, python, append([]string{"nbcheck.py"}, args...)...)
}

// runInNotebookEnv runs a command in the notebooks' environment and returns its exit code and
// output.
func runInNotebookEnv(t *testing.T, name string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = notebookEnv(repoRoot(t))
	out, err := cmd.CombinedOutput()
	if err == nil {
		return 0, string(out)
	}
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "%s did not run: %s", name, out)
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

// runPython runs a Python script with nbcheck's folder on its path and returns its output.
func runPython(t *testing.T, python, script string, args ...string) string {
	t.Helper()
	cmd := exec.Command(python, append([]string{"-c", script}, args...)...)
	cmd.Env = notebookEnv(repoRoot(t))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// TestLabForm: labform.py writes a notebook as JupyterLab saves it: consecutive streams of one
// name merged (carriage returns and backspaces processed as JupyterLab does), a stream of
// another name or a display between them kept apart, numbers as JavaScript writes them; a file
// in that form is its own form, and --check-only says where a file is not.
func TestLabForm(t *testing.T) {
	_, python := nbcheckPython(t)
	script := `import json, labform
print(json.dumps(labform.merge_streams([
    {"output_type": "stream", "name": "stdout", "text": "a\n"},
    {"output_type": "stream", "name": "stdout", "text": ["b", "\n"]},
    {"output_type": "stream", "name": "stderr", "text": "e\n"},
    {"output_type": "stream", "name": "stdout", "text": "step 1/3\rstep 2/3\rstep 3/3\n"},
    {"output_type": "display_data", "data": {}, "metadata": {}},
    {"output_type": "stream", "name": "stdout", "text": "ab\bc\n"},
    {"output_type": "stream", "name": "stdout", "text": "x\r"},
    {"output_type": "stream", "name": "stdout", "text": "y\n"},
])))
print(json.dumps(labform.js_number({"a": 20.0, "b": -0.0, "c": 0.5, "d": 1e-05, "e": 1.2345678901234568e20, "f": 1e21, "g": 2**60 + 1, "h": True, "i": [3, 4.0]})))`
	out := runPython(t, python, "import sys; sys.path.insert(0, 'notebooks')\n"+script)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	require.JSONEq(t, `[{"output_type": "stream", "name": "stdout", "text": "a\nb\n"},
		{"output_type": "stream", "name": "stderr", "text": "e\n"},
		{"output_type": "stream", "name": "stdout", "text": "step 3/3\n"},
		{"output_type": "display_data", "data": {}, "metadata": {}},
		{"output_type": "stream", "name": "stdout", "text": "ac\ny\n"}]`, lines[0])
	require.Equal(t, `{"a": 20, "b": 0, "c": 0.5, "d": 1e-05, "e": 123456789012345680000, "f": 1e+21, "g": 1152921504606847000, "h": true, "i": [3, 4]}`, lines[1])

	dir := t.TempDir()
	nb := writeNotebook(t, dir, "form.ipynb",
		cell(1, nil, map[string]any{"expect": []any{map[string]any{"regex": `(\d+) apples`, "min": 2.0}}}, stdout("3 apples\n"), stdout("two\n")))
	code, out := runNBCheck(t, python, "--check-only", nb)
	require.Equal(t, 0, code, "the form is checked only with --form:\n%s", out)
	code, out = runNBCheck(t, python, "--check-only", "--form", nb)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "notebook: not in the form JupyterLab saves (opening it in JupyterLab would rewrite it; line 1: ")
	code, out = runNBCheck(t, python, "--reformat", nb)
	require.Equal(t, 0, code, out)
	raw, err := os.ReadFile(nb)
	require.NoError(t, err)
	require.Contains(t, string(raw), "\"text\": [\n      \"3 apples\\n\",\n      \"two\\n\"\n     ]", "the streams merged")
	require.Contains(t, string(raw), `"min": 2,`)
	require.True(t, strings.HasSuffix(string(raw), "}\n"))
	code, out = runNBCheck(t, python, "--check-only", "--form", nb)
	require.Equal(t, 0, code, out)
	again := runPython(t, python, "import sys; sys.path.insert(0, 'notebooks')\nimport labform, nbformat\n"+
		"raw = open(sys.argv[1], 'rb').read()\nprint(labform.jupyterlab_bytes(nbformat.reads(raw.decode(), as_version=4)) == raw)", nb)
	require.Equal(t, "True\n", again, "a notebook in JupyterLab's form is its own form")
}

// TestNBCheckDataKinds: an expectation keyed by "data" applies only to outputs of that data,
// as the notebook's metadata names it ("synthetic", "real" or "DATASET:KIND"); one whose data
// is not named is a problem, and --data-dir names it from a data folder instead.
func TestNBCheckDataKinds(t *testing.T) {
	_, python := nbcheckPython(t)
	dir := t.TempDir()
	expect := map[string]any{"expect": []any{
		map[string]any{"regex": `accuracy ([0-9.]+)%`, "min": 30, "data": "synthetic"},
		map[string]any{"regex": `accuracy ([0-9.]+)%`, "min": 2, "data": "real"},
		map[string]any{"regex": `cifar10 run: ([0-9.]+)%`, "min": 20, "data": "cifar10:real"},
		map[string]any{"regex": `cifar10 run: ([0-9.]+)%`, "max": 30, "data": "cifar10:synthetic"},
	}}
	write := func(name string, data []string) string {
		path := writeNotebook(t, dir, name, cell(1, nil, expect, stdout("test accuracy 9.5%\ncifar10 run: 40%\n")))
		if data == nil {
			return path
		}
		var nb map[string]any
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &nb))
		nb["metadata"].(map[string]any)["cifarlab"] = map[string]any{"datasets": []string{"cifar10", "cifar100"}, "data": data}
		raw, err = json.Marshal(nb)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, raw, 0o644))
		_, out := runNBCheck(t, python, "--reformat", path)
		require.Contains(t, out, "written in the form JupyterLab saves")
		return path
	}
	real := write("real.ipynb", []string{"cifar10: real, unverified (binary layout, 20000 train / 10000 test images)",
		"cifar100: real, verified (python layout, 50000 train / 10000 test images)"})
	code, out := runNBCheck(t, python, "--check-only", real)
	require.Equal(t, 0, code, "9.5%% passes the real floor of 2%%, and the synthetic bounds do not apply:\n%s", out)

	synthetic := write("synthetic.ipynb", []string{"cifar10: synthetic (binary layout, 5000 train / 1000 test images)",
		"cifar100: synthetic (binary layout, 5000 train / 1000 test images)"})
	code, out = runNBCheck(t, python, "--check-only", synthetic)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "'accuracy 9.5%': 9.5 is below the floor 30")
	require.Contains(t, out, "'cifar10 run: 40%': 40.0 is above the ceiling 30")

	mixed := write("mixed.ipynb", []string{"cifar10: real, unverified (binary layout, 20000 train / 10000 test images)",
		"cifar100: synthetic (binary layout, 5000 train / 1000 test images)"})
	code, out = runNBCheck(t, python, "--check-only", mixed)
	require.Equal(t, 0, code, "neither all real nor all synthetic; cifar10 is real:\n%s", out)

	unnamed := write("unnamed.ipynb", nil)
	_, _ = runNBCheck(t, python, "--reformat", unnamed)
	code, out = runNBCheck(t, python, "--check-only", unnamed)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "depends on the data, but the notebook does not say which data it ran on")

	// --data-dir: the outputs come from a run on a folder of synthetic data.
	cifarlab := filepath.Join(repoRoot(t), ".bin", "cifarlab")
	need(t, fileExists(cifarlab), cifarlab, "run kernel/setup.sh (it builds the cifarlab command)")
	data := filepath.Join(t.TempDir(), "data")
	for _, dataset := range []string{"cifar10", "cifar100"} {
		outb, err := exec.Command(cifarlab, "synth", "--dataset", dataset, "--out", data, "--train", "20", "--test", "10").CombinedOutput()
		require.NoError(t, err, "%s", outb)
	}
	code, out = runNBCheck(t, python, "--check-only", "--data-dir", data, real)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "9.5 is below the floor 30", "the folder's data is synthetic, whatever the metadata says")
}
