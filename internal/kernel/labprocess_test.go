package kernel

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/internal/oomkill"
	"github.com/cifarlab/cifarlab/internal/proctree"
	"github.com/stretchr/testify/require"
)

// TestLabProcessLifecycle runs lab.Fit cells through the real CPU kernel and follows the
// kernel's lab process (nb.LabProcessEnv) through its life: the first Fit starts it and a second
// cell's Fit runs in the same process, with the same result; killed with SIGKILL, the next cell
// says so in one line and trains in a new one; after a library source file changes, the next
// cell starts a fresh one; a run another program is training is refused; a sentinel error keeps
// errors.Is across the socket; a loaded run's Evaluate runs in the lab process, with the same
// result as in the cell's; and when the kernel shuts down, every lab process it had ends.
func TestLabProcessLifecycle(t *testing.T) {
	// The test edits a library file: it runs on a private copy of the checkout, so that the
	// packages go test runs beside it (notebooks, cmd) keep building the real one.
	repo := privateCheckout(t, testRepo(t))
	jupyterDir := installKernels(t, repo)
	dir := t.TempDir()
	runsDir := filepath.Join(dir, "data", "runs")
	require.NoError(t, os.MkdirAll(runsDir, 0o755))

	// Another program trains the run "busy": the test holds its lock, as a second notebook's
	// kernel (or its lab process) training it would.
	lock, err := os.OpenFile(filepath.Join(runsDir, ".busy.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	defer lock.Close()
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	_, err = fmt.Fprintf(lock, "%d\n", os.Getpid())
	require.NoError(t, err)

	stale := filepath.Join(repo.Dir, "cifarlib", "nb", "zz_labprocess_stale_test_file.go")

	fit := func(name string) string {
		return fmt.Sprintf("%%%%\ns := lab.Settings()\ns.Run.Steps, s.Data.BatchSize, s.Run.Seed, s.Eval.Every, s.Eval.SkipFinal = 20, 32, 1, training.EvalOff, true\n"+
			"res := nb.Must(lab.Fit(%q, s))\n"+
			"fmt.Printf(\"lab process %%s: end step %%d, loss %%v\\n\", labPID(), res.EndStep, res.Loss)", name)
	}
	cells := []string{
		"import (\n\t\"context\"\n\t\"errors\"\n\t\"os\"\n\t\"path/filepath\"\n\t\"strconv\"\n\t\"strings\"\n\t\"syscall\"\n\t\"time\"\n\n" +
			"\t\"github.com/cifarlab/cifarlab/cifarlib\"\n\t\"github.com/cifarlab/cifarlab/cifarlib/data\"\n" +
			"\t\"github.com/cifarlab/cifarlab/cifarlib/nb\"\n\t\"github.com/cifarlab/cifarlab/cifarlib/training\"\n)\n\n" +
			"var lab = nb.Open(data.CIFAR10())\n\n" +
			"func labPID() string {\n\tb, _ := os.ReadFile(filepath.Join(os.Getenv(\"GONB_TMP_DIR\"), \"cifarlab-lab\", \"lab.pid\"))\n\treturn strings.TrimSpace(string(b))\n}\n\n" +
			"%%\nfmt.Println(lab.Arch, \"kernel folder\", os.Getenv(\"GONB_TMP_DIR\"))",
		fit("warm"), // 1: starts the lab process
		fit("warm"), // 2: the same process
		"%%\npid, _ := strconv.Atoi(labPID())\nfmt.Println(\"kill -9\", pid, syscall.Kill(pid, syscall.SIGKILL))\ntime.Sleep(time.Second)", // 3
		fit("warm"), // 4: a new one, after one line
		fmt.Sprintf("%%%%\nfmt.Println(os.WriteFile(%q, []byte(\"package nb\\n\"), 0o644))", stale), // 5: the library changes
		fit("warm"), // 6: a fresh one
		"%%\ns := lab.Settings()\ns.Run.Steps, s.Data.BatchSize = 20, 32\n_, err := lab.Fit(\"busy\", s)\nfmt.Println(\"busy:\", err)\n" +
			"s.Run.Steps, s.Model.Head = 1, 5\n_, err = lab.Fit(\"head\", s)\n" +
			"fmt.Println(\"head mismatch:\", errors.Is(err, cifarlib.ErrHeadMismatch), err)", // 7
		"%%\nrun := nb.Must(lab.Load(\"warm\"))\nopts := training.EvalOptions{MaxExamples: 300}\n" + // 8: evaluated in the lab process
			"ev := nb.Must(run.Evaluate(context.Background(), lab.Test, opts))\n" +
			"here := nb.Must(training.Evaluate(context.Background(), run.Backend, run.Model, run.Store, lab.Test, opts))\n" +
			"fmt.Printf(\"lab process %s: evaluated there %t: accuracy %v loss %v; here: accuracy %v loss %v\\n\", labPID(), run.EvaluateWith != nil, ev.Accuracy, ev.Loss, here.Accuracy, here.Loss)",
	}
	out := runCells(t, repo, jupyterDir, dir, "interrupt_cells.py", []string{CPUKernel, "-1", ""}, cells...)
	res := cellResults(t, out, len(cells))
	for i, c := range res {
		require.Equal(t, "ok", c.Status, "cell %d: %s", i, c.Text)
	}
	kernelFolder := regexp.MustCompile(`kernel folder (\S+)`).FindStringSubmatch(res[0].Text)
	require.NotNil(t, kernelFolder)
	line := regexp.MustCompile(`lab process (\d+): end step 20, loss (\S+)`)
	pidLoss := func(i int) (int, string) {
		t.Helper()
		m := line.FindStringSubmatch(res[i].Text)
		require.NotNil(t, m, "cell %d: %s", i, res[i].Text)
		pid, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		return pid, m[2]
	}
	first, loss := pidLoss(1)
	second, loss2 := pidLoss(2)
	require.Equal(t, first, second, "the second cell's Fit runs in the same lab process")
	require.Equal(t, loss, loss2, "and trains the same run again")
	require.NotContains(t, res[1].Text+res[2].Text, "lab process:", "no note when all is well")

	require.Contains(t, res[3].Text, fmt.Sprintf("kill -9 %d <nil>", first))
	afterKill, loss4 := pidLoss(4)
	require.NotEqual(t, first, afterKill)
	require.Equal(t, loss, loss4)
	notes := regexp.MustCompile(`(?m)^lab process: .*$`).FindAllString(res[4].Text, -1)
	how := "killed or crashed, not out of memory" // kill -9, which the memory cgroup did not count
	if !oomkill.Take().Known() {
		how = "killed, or out of memory" // no memory cgroup to tell
	}
	require.Equal(t, []string{fmt.Sprintf("lab process: the previous one (pid %d) ended (%s: see %s); "+
		"starting a new one; nothing on disk is lost", first, how, filepath.Join(kernelFolder[1], "cifarlab-lab", "lab.log"))}, notes)

	require.Contains(t, res[5].Text, "<nil>")
	fresh, loss6 := pidLoss(6)
	require.NotEqual(t, afterKill, fresh)
	require.Equal(t, loss, loss6)
	require.Contains(t, res[6].Text, fmt.Sprintf("lab process: the running one (pid %d) cannot serve this cell: the library code changed since it started; starting a new one", afterKill))

	require.Contains(t, res[7].Text, fmt.Sprintf("busy: nb: run \"busy\" is being trained by another program (pid %d: ", os.Getpid()))
	require.Contains(t, res[7].Text, "head mismatch: true")

	// Load and Evaluate: the evaluation of the lab's test split runs in the lab process, and
	// gives what this program's evaluation of the same weights gives.
	m := regexp.MustCompile(`lab process (\d+): evaluated there true: accuracy (\S+) loss (\S+); here: accuracy (\S+) loss (\S+)`).FindStringSubmatch(res[8].Text)
	require.NotNil(t, m, res[8].Text)
	require.Equal(t, strconv.Itoa(fresh), m[1])
	require.Equal(t, m[4], m[2], "accuracy")
	lossThere, err := strconv.ParseFloat(m[3], 64)
	require.NoError(t, err)
	lossHere, err := strconv.ParseFloat(m[5], 64)
	require.NoError(t, err)
	// The same program on the same backend: the same sums, in the same order; allow float32's
	// rounding of a mean over 300 examples in case the batches are summed in another order.
	require.InEpsilon(t, lossHere, lossThere, 300*1.2e-7)

	// The kernel has shut down: every lab process it started has ended.
	for _, pid := range []int{first, afterKill, fresh} { // proctree.Stat: no such process, or a zombie
		require.Eventually(t, func() bool { _, err := proctree.Stat(pid); return err != nil }, 10*time.Second, 50*time.Millisecond, "lab process %d outlived its kernel", pid)
	}
	// Each ended cleanly (it is in a session of its own, out of reach of the kernel's process
	// group): its log says why: replaced, then, at the kernel's end, either it saw the kernel go
	// (it looks every second) or the kernel's supervisor (cmd/cifarlab-kernel) sent it SIGTERM
	// first. The kernel was killed, so GoNB's folder, and the log, are left.
	log, err := os.ReadFile(filepath.Join(kernelFolder[1], "cifarlab-lab", "lab.log"))
	require.NoError(t, err)
	require.Regexp(t, `(?s)cifarlab lab process: ended: the library code changed since it started\n.*cifarlab lab process: ended: (the kernel is gone|signal: terminated)\n`, string(log))
}
