package kernel

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/stretchr/testify/require"
)

// stepDelayTag is the build tag of cifarlib/training's test-only step delay
// (training.TestStepDelayEnv): every training step of a cell built with it, and of the lab
// process started from such a cell, takes that much longer.
const stepDelayTag = "cifarlab_teststepdelay"

// withStepDelayTag makes the kernel installed in jupyterDir build its cells with stepDelayTag
// (the kernelspec's GOFLAGS, which GoNB's go build reads), and nothing else of it changes.
func withStepDelayTag(t *testing.T, jupyterDir string) {
	t.Helper()
	path := filepath.Join(kernelDir(jupyterDir, CPUKernel), "kernel.json")
	var spec map[string]any
	readJSON(t, path, &spec)
	env := spec["env"].(map[string]any)
	flags := env["GOFLAGS"].(string)
	if strings.Contains(flags, "-tags=") {
		flags = strings.Replace(flags, "-tags=", "-tags="+stepDelayTag+",", 1)
	} else {
		flags += " -tags=" + stepDelayTag
	}
	env["GOFLAGS"] = flags
	b, err := json.MarshalIndent(spec, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// TestInterruptInALongStep interrupts lab.Fit through the real CPU kernel, as JupyterLab's
// Kernel → Interrupt does, while a training step runs that is longer than the 5 s GoNB waits
// between the interrupt and the kill (each step made 20 s longer by the test-only step delay,
// built into the cells and so into the kernel's lab process). The cell does not wait to be
// killed: within GoNB's 5 s it says what happens and how to continue, and ends
// (`interrupted: the lab process saves run "X" after the current step (step K of N); re-run this
// cell to continue from there`), never "signal: killed". The lab process finishes the step and
// saves it. A later cell's lab.Fit of the run, sent to the lab process while it saves, says it
// waits for that save, then resumes from the saved step; interrupted again, a lab.Load right after
// waits for the second save, says so, and loads the run at the step the message named; run.json
// says "interrupted" there; and the same Fit cell run once more trains the last step.
func TestInterruptInALongStep(t *testing.T) {
	if testing.Short() {
		t.Skip("about three minutes: five training steps of 20 s through a real kernel")
	}
	repo := testRepo(t)
	jupyterDir := installKernels(t, repo)
	withStepDelayTag(t, jupyterDir)
	t.Setenv("CIFARLAB_TEST_STEP_DELAY", "20s")
	// The interrupt goes 2 s after the step before the one to interrupt has logged: by then the
	// lab process is surely inside the next (20 s) step, not between the two, where it would
	// stop and save at once.
	t.Setenv("INTERRUPT_DELAY", "2")
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	fit := "%%\ns := lab.Settings()\ns.Run.Steps, s.Data.BatchSize, s.Run.Seed, s.Record.LogEvery, s.Eval.Every, s.Eval.SkipFinal = 5, 8, 1, 1, training.EvalOff, true\n" +
		"res := nb.Must(lab.Fit(\"slow\", s))\n" +
		"fmt.Printf(\"end step %d\\n\", res.EndStep)"
	cells := []string{
		"import (\n\t\"github.com/cifarlab/cifarlab/cifarlib/data\"\n\t\"github.com/cifarlab/cifarlab/cifarlib/nb\"\n" +
			"\t\"github.com/cifarlab/cifarlab/cifarlib/runs\"\n\t\"github.com/cifarlab/cifarlab/cifarlib/training\"\n)\n\n" +
			"var lab = nb.Open(data.CIFAR10())\n\n%%\nfmt.Println(lab.Arch)",
		fit, // 1: interrupted in step 2
		fit, // 2: waits for step 2's save, resumes, interrupted in step 4
		"%%\nck := nb.Must(lab.Load(\"slow\"))\nfmt.Println(\"loaded step\", ck.Info.Step)\n" + // 3: waits for step 4's save
			"rec := nb.Must(runs.ReadRecord(nb.Must(lab.RunDir(\"slow\"))))\nfmt.Println(\"run.json:\", rec.Status)",
		fit, // 4: the last step
	}
	out := runCells(t, repo, jupyterDir, dir, "interrupt_cells.py", []string{CPUKernel, "1,2", "step 1/5|step 3/5"}, cells...)
	var res []struct {
		Text           string   `json:"text"`
		Status         string   `json:"status"`
		Interrupted    bool     `json:"interrupted"`
		AfterInterrupt *float64 `json:"after_interrupt"`
	}
	require.NoError(t, json.Unmarshal(out, &res))
	require.Len(t, res, len(cells))
	for i, c := range res {
		after := ""
		if c.AfterInterrupt != nil {
			after = fmt.Sprintf(", ended %.1f s after the interrupt", *c.AfterInterrupt)
		}
		t.Logf("cell %d (%s%s):\n%s", i, c.Status, after, c.Text)
	}
	require.Equal(t, "ok", res[0].Status, res[0].Text)

	for i, step := range map[int]int{1: 2, 2: 4} {
		c := res[i]
		require.True(t, c.Interrupted, "cell %d never logged the step before the one to interrupt: %s", i, c.Text)
		require.Equal(t, "ok", c.Status, "cell %d: an interrupt asked for is no error", i)
		require.NotContains(t, c.Text, "exit status", "cell %d", i)
		require.NotNil(t, c.AfterInterrupt)
		require.Less(t, *c.AfterInterrupt, 5.0, "cell %d ended on its own, before GoNB's kill 5 s after the interrupt", i)
		require.Contains(t, c.Text, fmt.Sprintf("interrupted: the lab process saves run \"slow\" after the current step (step %d of 5); "+
			"re-run this cell to continue from there\n", step), "cell %d", i)
		require.NotContains(t, c.Text, "signal: killed", "cell %d", i)
		require.NotContains(t, c.Text, "end step", "cell %d: the rest of the cell does not run", i)
	}
	// The second Fit waited for the first one's save in the lab process, then resumed from it.
	require.Contains(t, res[2].Text, "lab process: run \"slow\" is still saving after its interrupt (finishing step 2 of 5, then saving); this cell waits for it\n")
	require.Contains(t, res[2].Text, fmt.Sprintf("resumed from checkpoint %s at step 2 of 5\n", filepath.Join(dataDir, "runs", "slow")))

	// Load waited for the second save, said so, and got the run as saved.
	load := res[3]
	require.Equal(t, "ok", load.Status, load.Text)
	require.Regexp(t, `run "slow" is still saving after its interrupt \(finishing step 4 of 5, then saving, in process \d+\); waiting for it\n`+
		`run "slow": saved \(waited [0-9.]+s\)\n`, load.Text)
	require.Contains(t, load.Text, "loaded step 4\n")
	require.Contains(t, load.Text, "run.json: interrupted\n")

	last := res[4]
	require.Equal(t, "ok", last.Status, last.Text)
	require.Contains(t, last.Text, fmt.Sprintf("resumed from checkpoint %s at step 4 of 5\n", filepath.Join(dataDir, "runs", "slow")))
	require.Contains(t, last.Text, "end step 5\n")
	rec, err := runs.ReadRecord(filepath.Join(dataDir, "runs", "slow"))
	require.NoError(t, err)
	require.Equal(t, runs.RunDone, rec.Status)
}
