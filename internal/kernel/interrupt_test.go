package kernel

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/stretchr/testify/require"
)

// TestInterruptedFitResumes interrupts lab.Fit through the real CPU kernel the way JupyterLab's
// Kernel → Interrupt does (the Fit runs in the kernel's lab process; the cell forwards the
// interrupt), once training has logged its step 10, and checks what a notebook
// user then has: the cell stops with how to continue and nothing else (no "signal: interrupt",
// no "exit status": an interrupt asked for is no error), run.json says
// "interrupted" at the step the message names, the checkpoint is there for lab.Load, and
// running the same cell again resumes from that step to the end, with the programs the lab
// process kept (nothing compiles), and the same final loss, test accuracy and moving averages
// as a run never interrupted.
func TestInterruptedFitResumes(t *testing.T) {
	repo := testRepo(t)
	jupyterDir := installKernels(t, repo)
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	const steps = 400
	fit := func(name string) string {
		return fmt.Sprintf("%%%%\ns := lab.Settings()\ns.Run.Steps, s.Data.BatchSize, s.Run.Seed, s.Record.LogEvery = %d, 64, 1, 10\n"+
			"res := nb.Must(lab.Fit(%q, s))\n"+
			"fmt.Println(\"train step compiles:\", res.Timeline.Compiles(runs.ProgramTrainStep))\n"+
			"fmt.Printf(\"end step %%d, loss %%v, test accuracy %%v, moving average %%v, train accuracy %%v\\n\", res.EndStep, res.Loss, res.Eval.Accuracy, res.MovingLoss, res.Accuracy)", steps, name)
	}
	cells := []string{
		"import (\n\t\"os\"\n\t\"path/filepath\"\n\n\t\"github.com/cifarlab/cifarlab/cifarlib/data\"\n\t\"github.com/cifarlab/cifarlab/cifarlib/nb\"\n" +
			"\t\"github.com/cifarlab/cifarlab/cifarlib/runs\"\n\t\"github.com/cifarlab/cifarlab/cifarlib/training\"\n)\n\n" +
			"var lab = nb.Open(data.CIFAR10())\n\n%%\nfmt.Println(lab.Arch)",
		fit("stopped"),
		"%%\nrec := nb.Must(runs.ReadRecord(nb.Must(lab.RunDir(\"stopped\"))))\nfmt.Println(\"run.json:\", rec.Status)\n" +
			"ck := nb.Must(lab.Load(\"stopped\"))\nfmt.Println(\"loaded step\", ck.Info.Step)\n" +
			"_, err := os.Stat(filepath.Join(os.Getenv(\"GONB_TMP_DIR\"), \"cifarlab-lab\", \"lab.pid\"))\nfmt.Println(\"lab process:\", err == nil)",
		fit("stopped"),
		fit("reference"),
	}
	out := runCells(t, repo, jupyterDir, dir, "interrupt_cells.py", []string{CPUKernel, "1", "step 10/"}, cells...)
	var res []struct {
		Text        string  `json:"text"`
		Error       *string `json:"error"`
		Status      string  `json:"status"`
		Interrupted bool    `json:"interrupted"`
	}
	require.NoError(t, json.Unmarshal(out, &res))
	require.Len(t, res, len(cells))
	for i, c := range res {
		t.Logf("cell %d (%s, interrupted %v):\n%s", i, c.Status, c.Interrupted, c.Text)
	}
	require.Equal(t, "ok", res[0].Status, res[0].Text)

	// The interrupted cell: stopped after saving, with what to do next.
	stopped := res[1]
	require.True(t, stopped.Interrupted, "the cell never logged step 10: %s", stopped.Text)
	require.Equal(t, "ok", stopped.Status, "an interrupt the user asked for is no error: %s", stopped.Text)
	require.Nil(t, stopped.Error)
	require.NotContains(t, stopped.Text, "exit status", "the message alone, not GoNB's exit status in red")
	m := regexp.MustCompile(`run "stopped" interrupted at step (\d+) of 400; its checkpoint is saved in (\S+)\.\n` +
		`Run this cell again to continue from step (\d+) \(the same lab\.Fit call resumes\), or use lab\.Load\("stopped"\)`).
		FindStringSubmatch(stopped.Text)
	require.NotNil(t, m, "the interrupt message: %s", stopped.Text)
	step, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	require.Equal(t, m[1], m[3])
	require.GreaterOrEqual(t, step, 10)
	require.Less(t, step, steps)
	require.Equal(t, "$CIFARLAB_DATA/runs/stopped", m[2], "paths in the data folder are shown from $CIFARLAB_DATA")
	require.NotContains(t, stopped.Text, "signal: interrupt", "the cell's program handled the interrupt rather than die of it")
	require.NotContains(t, stopped.Text, "end step", "the rest of the cell does not run")

	// What the interrupt left on disk, read by the next cell: run.json and the checkpoint.
	require.Equal(t, "ok", res[2].Status, res[2].Text)
	require.Contains(t, res[2].Text, "run.json: interrupted\n")
	require.Contains(t, res[2].Text, fmt.Sprintf("run \"stopped\": loaded cnn for cifar10 (10 classes) at step %d", step))
	require.Contains(t, res[2].Text, fmt.Sprintf("loaded step %d\n", step))
	require.Contains(t, res[2].Text, "lab process: true\n", "the Fit cells ran in the kernel's lab process (nb.LabProcessEnv)")

	resumed, reference := res[3], res[4]
	require.Equal(t, "ok", resumed.Status, resumed.Text)
	require.Contains(t, resumed.Text, fmt.Sprintf("resumed from checkpoint %s at step %d of 400\n", filepath.Join(dataDir, "runs", "stopped"), step))
	require.Contains(t, resumed.Text, fmt.Sprintf("run \"stopped\": trained %d steps in", steps-step))
	require.Equal(t, "ok", reference.Status, reference.Text)
	final := regexp.MustCompile(`end step 400, loss \S+, test accuracy \S+, moving average \S+, train accuracy \S+`)
	require.NotEmpty(t, final.FindString(reference.Text), reference.Text)
	require.Equal(t, final.FindString(reference.Text), final.FindString(resumed.Text),
		"the resumed run ends where an uninterrupted one does, its moving averages too (carried over in the checkpoint)")
	require.Contains(t, resumed.Text, "train step compiles: 0\n", "the resumed run uses the programs the lab process keeps")
	rec, err := runs.ReadRecord(filepath.Join(dataDir, "runs", "stopped"))
	require.NoError(t, err)
	require.Equal(t, runs.RunDone, rec.Status)
	var result struct {
		StartStep int `json:"start_step"`
	}
	require.NoError(t, json.Unmarshal(rec.Result, &result))
	require.Equal(t, step, result.StartStep)
}
