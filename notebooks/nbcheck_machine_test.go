package notebooks_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// nbcheckPython returns the checkout and the venv's python that runs nbcheck.py.
func nbcheckPython(t *testing.T) (repo, python string) {
	t.Helper()
	repo = repoRoot(t)
	python = filepath.Join(repo, ".venv", "bin", "python")
	need(t, fileExists(python), "the Python venv "+filepath.Join(repo, ".venv"), "run kernel/setup.sh")
	return repo, python
}

// TestNBCheckMachinePaths: nbcheck.py refuses outputs that carry the machine that ran them,
// each kind with its own message, in stream text, HTML and error tracebacks alike, and accepts
// what a portable output shows instead: $CIFARLAB_DATA paths, paths relative to the checkout,
// device names, URLs, a plugin's name.
func TestNBCheckMachinePaths(t *testing.T) {
	repo, python := nbcheckPython(t)
	dir := t.TempDir()

	clean := writeNotebook(t, dir, "clean.ipynb", cell(1, nil, nil, stdout(
		"data:    cifar10: real, unverified (binary layout, in $CIFARLAB_DATA/cifar-10-batches-bin)\n"+
			"no /dev/nvidia[0-9]* device; the CUDA PJRT plugin is installed (jax-cuda13-pjrt 0.11.2)\n"+
			"\tcifarlib/loss.go:139 +0x898\n\t [[ Cell [4] Line 10 ]] +0x443\n"+
			"see https://www.cs.toronto.edu/~kriz/cifar.html and https://github.com/janpfeifer/gonb/blob/main/main.go#L1\n"+
			"import os; model.load_state_dict(safetensors.torch.load_file(os.path.expandvars(\"$CIFARLAB_DATA/runs/x.safetensors\")))\n")))
	code, out := runNBCheck(t, python, "--check-only", clean)
	require.Equal(t, 0, code, out)

	cases := []struct{ name, what string }{
		{"\x1b[7m[[ Cell [4] Line 10 ]]\x1b[0m", `an ANSI escape code ('\x1b[')`},
		{"saved in /root/.cache/cifarlab/runs/x", "a home or temporary folder's path ('/root/.cache/cifarlab/runs/x')"},
		{"(/home/ann/data)", "a home or temporary folder's path ('/home/ann/data')"},
		{"plugin at /opt/lab/.venv/lib/python3.11/site-packages/jax_plugins/x.so", "a venv's path ('/opt/lab/.venv/lib/python3.11/site-packages/jax_plugins/x.so')"},
		{"\t/srv/checkout/cifarlib/loss.go:139 +0x898", "an absolute Go source position ('/srv/checkout/cifarlib/loss.go:139')"},
		{"\t [[ Cell [4] Line 10 ]] gonb_b0003f12/main.go:28", "GoNB's temporary main.go ('gonb_b0003f12/main.go')"},
		{"written to " + repo + "/notebooks/x.png", "the checkout's path " + repo + " ('" + repo + "/notebooks/x.png')"},
	}
	var cells []map[string]any
	for _, c := range cases {
		cells = append(cells, cell(len(cells)+1, nil, nil, stdout(c.name+"\n")),
			cell(len(cells)+2, nil, nil, display("text/html", "<pre>"+c.name+"</pre>")),
			cell(len(cells)+3, []string{"raises-exception"}, nil,
				map[string]any{"output_type": "error", "ename": "ERROR", "evalue": "exit status 2", "traceback": []string{c.name}}))
	}
	code, out = runNBCheck(t, python, "--check-only", writeNotebook(t, dir, "bad.ipynb", cells...))
	require.Equal(t, 1, code, out)
	for _, c := range cases {
		require.Equal(t, 3, strings.Count(out, "output carries "+c.what+": "), "%s: once in each of stream, HTML and traceback:\n%s", c.what, out)
	}
	require.Equal(t, len(cells), strings.Count(out, "  BAD cell"), out)
}

// TestNBCheckPortable: after a run, nbcheck.py cleans the outputs of what the kernel adds of the
// machine (GoNB's highlighting and its temporary main.go in a panic's trace, the checkout's and
// Go's folders) so that a notebook regenerated anywhere passes TestCommittedOutputsPortable; the
// panic's story (message, frames, the cell's line) stays.
func TestNBCheckPortable(t *testing.T) {
	repo, python := nbcheckPython(t)
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	require.NoError(t, err)
	trace := "panic: model head has 10 outputs\n\ngoroutine 1 [running]:\ngithub.com/cifarlab/cifarlab/cifarlib.(*LossBuilder).guardedLoss(0xaf)\n" +
		"\t" + repo + "/cifarlib/loss.go:139 +0x898\nruntime.gopanic()\n\t" + strings.TrimSpace(string(goroot)) + "/src/runtime/panic.go:12\n" +
		"main.main()\n\t \x1b[7m[[ Cell [4] Line 10 ]]\x1b[0m " + os.TempDir() + "/gonb_b0003f12/main.go:28 +0x443\n"
	html := `<span class="gonb-err-location">/tmp/gonb_b0003f12/main.go:28</span> +0x443`
	// GoNB maps main.go:NN in each piece it reads of the program's stderr; the Go runtime writes a
	// frame's file and line separately, so a piece can end inside the path, which stays unmapped.
	split := []map[string]any{stderr("main.main()\n\t" + os.TempDir() + "/gonb_b0003f12/main.go"), stderr(":28 +0x443\n")}
	nb := writeNotebook(t, t.TempDir(), "run.ipynb", cell(1, []string{"raises-exception"}, nil,
		stderr(trace), display("text/html", html), errorOutput("exit status 2")),
		cell(2, []string{"raises-exception"}, nil, append(split, errorOutput("exit status 2"))...))
	script := "import sys, nbformat, nbcheck\nnb = nbformat.read(sys.argv[1], as_version=4)\nnbcheck.portable(nb, nbcheck.CHECKOUT)\n" +
		"print(nbcheck.machine_problems(nb.cells[0], nbcheck.CHECKOUT))\nprint(nb.cells[0].outputs[0].text, end='')\nprint(nb.cells[0].outputs[1].data['text/html'])\n" +
		"print(nbcheck.machine_problems(nb.cells[1], nbcheck.CHECKOUT), len(nb.cells[1].outputs))\nprint(nb.cells[1].outputs[0].text, end='')"
	cmd := exec.Command(python, "-c", script, nb)
	cmd.Env = notebookEnv(repo)
	outb, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", outb)
	require.Equal(t, "[]\npanic: model head has 10 outputs\n\ngoroutine 1 [running]:\ngithub.com/cifarlab/cifarlab/cifarlib.(*LossBuilder).guardedLoss(0xaf)\n"+
		"\tcifarlib/loss.go:139 +0x898\nruntime.gopanic()\n\t$GOROOT/src/runtime/panic.go:12\nmain.main()\n\t [[ Cell [4] Line 10 ]]  +0x443\n"+
		`<span class="gonb-err-location"></span> +0x443`+"\n"+
		"[] 2\nmain.main()\n\t +0x443\n", string(outb))
}

// TestCommittedOutputsPortable runs nbcheck.py --check-only --form on the committed notebooks:
// their outputs meet every expectation (those that depend on the data, for the data their
// metadata names), carry nothing of the machine that regenerated them, and are in the form
// JupyterLab saves (opening one changes nothing).
func TestCommittedOutputsPortable(t *testing.T) {
	_, python := nbcheckPython(t)
	files, err := filepath.Glob("[0-9][0-9]-*.ipynb")
	require.NoError(t, err)
	require.Equal(t, wantNotebooks, files)
	report := filepath.Join(t.TempDir(), "report.json")
	code, out := runNBCheck(t, python, append([]string{"--check-only", "--form", "--report", report}, files...)...)
	require.Equal(t, 0, code, "committed outputs: regenerate them with notebooks/regenerate.sh\n%s", out)
	raw, err := os.ReadFile(report)
	require.NoError(t, err)
	var reps []struct{ OK bool }
	require.NoError(t, json.Unmarshal(raw, &reps))
	require.Len(t, reps, len(files))
}
