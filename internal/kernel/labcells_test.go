package kernel

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/internal/compilecache"
	"github.com/stretchr/testify/require"
)

// cellMessage is what display_messages.py read of one iopub message of a cell.
type cellMessage struct {
	Type      string  `json:"type"`
	DisplayID *string `json:"display_id"`
	Text      string  `json:"text"`
	T         float64 `json:"t"`
}

// labCell is one cell's messages, and what its report line (labCellReport) said.
type labCell struct {
	messages []cellMessage
	start    time.Time // the cell's program start
	clients  int       // XLA PJRT clients its program created (backends.Clients)
	pjrt     bool      // whether a PJRT plugin was mapped into its program
}

// labCellReport is the function the setup cell declares: each cell calls it last, and it prints
// the cell's program start, the XLA clients its program created and whether a PJRT plugin's
// shared object is mapped into it.
const labCellReport = `func report() {
	start, _ := runs.ProcessStart()
	maps, _ := os.ReadFile("/proc/self/maps")
	fmt.Printf("cell report: start %d clients %d pjrt %t\n", start.UnixNano(), backends.Clients(), strings.Contains(string(maps), "pjrt"))
}`

var labCellReportLine = regexp.MustCompile(`cell report: start (\d+) clients (\d+) pjrt (true|false)`)

// text is everything the cell printed (its streams), in order.
func (c labCell) text() string {
	var b strings.Builder
	for _, m := range c.messages {
		if m.Type == "stream" || m.Type == "error" {
			b.WriteString(m.Text)
		}
	}
	return b.String()
}

// status returns the texts of the cell's status line (one display: "cifarlab-status-..."), in
// order, and checks that it is one display, created once and then updated in place.
func (c labCell) status(t *testing.T) []string {
	t.Helper()
	var out []string
	id := ""
	for _, m := range c.messages {
		if m.DisplayID == nil || !strings.HasPrefix(*m.DisplayID, "cifarlab-status-") {
			continue
		}
		if id == "" {
			id = *m.DisplayID
			require.Equal(t, "display_data", m.Type, "the first line creates the display")
		} else {
			require.Equal(t, id, *m.DisplayID, "one status line per cell")
			require.Equal(t, "update_display_data", m.Type, "later lines replace it in place")
		}
		out = append(out, m.Text)
	}
	return out
}

// firstOutput returns how long after the cell's program started its first output arrived, and
// that output. What GoNB printed before the program started (`%env`'s line) is not the
// program's; the start is known to 10 ms (/proc/self/stat).
func (c labCell) firstOutput(t *testing.T) (time.Duration, cellMessage) {
	t.Helper()
	for _, m := range c.messages {
		if at := time.Unix(0, int64(m.T*1e9)); at.After(c.start.Add(-10 * time.Millisecond)) {
			return at.Sub(c.start), m
		}
	}
	require.Fail(t, "the cell's program printed nothing")
	return 0, cellMessage{}
}

// loadBound is how long a cell may take to say its first line: 1 s, times the run queue per core
// when the machine is busier than its cores (the shared test machine runs eight engineers'
// builds): the cell's program then gets that share of a core.
func loadBound(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/loadavg")
	require.NoError(t, err)
	load, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	require.NoError(t, err)
	return time.Duration(max(1, load/float64(runtime.NumCPU())) * float64(time.Second))
}

// TestLabCells runs a notebook's lab cells through the real CPU kernel (XLA CPU) and checks three
// things a user sees:
//
//   - No backend in a cell that does not compute: nb.Open creates no PJRT client, nor does a cell
//     whose Fit or Evaluate runs in the lab process (backends.Clients, and no PJRT plugin mapped
//     into the cell's program); a cell that computes on lab.Backend creates one, and so does Fit
//     in the cell's own program (CIFARLAB_LAB_PROCESS=0).
//   - A cell speaks from its first second: its first output is its status line, within 1 s of
//     its program's start (loadBound), before the lab process has even started; the line is
//     replaced in place while the train step compiles (the elapsed time), then says the steps,
//     and a batch that changes the program's shape says that it compiles a new program and why.
//     The same in the lab process and in the cell's own program; an evaluation says how many
//     images, the TTA level and its views, with its progress.
//   - An evaluation that reuses the work: the same evaluation again, also after the lab process
//     was killed, returns the result the run folder keeps at once and says so; another TTA level
//     evaluates again.
func TestLabCells(t *testing.T) {
	t.Setenv(compilecache.DirEnv, "off") // it checks what the first compile of a shape says: no program of another test is loaded
	repo := testRepo(t)
	jupyterDir := installKernels(t, repo)
	fitSteps := func(name string, steps, batch int) string {
		return fmt.Sprintf("%%%%\ndefer report()\ns := lab.Settings()\ns.Run.Steps, s.Data.BatchSize, s.Run.Seed = %d, %d, 1\ns.Eval.Every, s.Eval.SkipFinal = training.EvalOff, true\n"+
			"fmt.Println(\"timeline:\", nb.Must(lab.Fit(%q, s)).Timeline)", steps, batch, name)
	}
	fit := func(name string, batch int) string { return fitSteps(name, 20, batch) }
	evaluate := func(tta int) string {
		return fmt.Sprintf("%%%%\ndefer report()\nrun := nb.Must(lab.Load(\"warm\"))\n"+
			"ev := nb.Must(run.Evaluate(context.Background(), lab.Test, training.EvalOptions{MaxExamples: 300, TTA: %d}))\nfmt.Println(\"result:\", ev.Summary())", tta)
	}
	cells := []string{
		"import (\n\t\"context\"\n\t\"os\"\n\t\"path/filepath\"\n\t\"strconv\"\n\t\"strings\"\n\t\"syscall\"\n\t\"time\"\n\n" +
			"\t\"github.com/cifarlab/cifarlab/cifarlib/backends\"\n\t\"github.com/cifarlab/cifarlab/cifarlib/data\"\n" +
			"\t\"github.com/cifarlab/cifarlab/cifarlib/nb\"\n\t\"github.com/cifarlab/cifarlab/cifarlib/runs\"\n\t\"github.com/cifarlab/cifarlab/cifarlib/training\"\n)\n\n" +
			"var lab = nb.Open(data.CIFAR10())\n\n" + labCellReport + "\n\n" +
			"func labPID() int {\n\tb, _ := os.ReadFile(filepath.Join(os.Getenv(\"GONB_TMP_DIR\"), \"cifarlab-lab\", \"lab.pid\"))\n\tpid, _ := strconv.Atoi(strings.TrimSpace(string(b)))\n\treturn pid\n}\n\n" +
			"%%\ndefer report()\nfmt.Println(lab)", // 0: the lab, its backend named
		fit("warm", 32), // 1: starts the lab process, compiles
		fit("warm", 64), // 2: another batch: a new program, and why
		fit("warm", 64), // 3: the same run again: nothing compiles
		evaluate(2),     // 4: evaluated in the lab process, kept in the run folder
		evaluate(2),     // 5: the kept result
		"%%\ndefer report()\nfmt.Println(\"kill -9\", syscall.Kill(labPID(), syscall.SIGKILL))\ntime.Sleep(time.Second)", // 6
		evaluate(2), // 7: the kept result, with no lab process
		evaluate(1), // 8: another TTA level: evaluated (in a new lab process)
		"%%\ndefer report()\nfmt.Println(backends.ListDevices(lab.Backend))", // 9: computes on lab.Backend
		"%env CIFARLAB_LAB_PROCESS=0\n" + fitSteps("here", 100, 32),          // 10: in the cell's own program, long enough to redraw its steps
	}
	out := runCells(t, repo, jupyterDir, t.TempDir(), "display_messages.py", []string{CPUKernel}, cells...)
	var raw [][]cellMessage
	require.NoError(t, json.Unmarshal(out, &raw))
	require.Len(t, raw, len(cells))
	res := make([]labCell, len(raw))
	for i, ms := range raw {
		c := labCell{messages: ms}
		m := labCellReportLine.FindStringSubmatch(c.text())
		require.NotNil(t, m, "cell %d printed no report: %s", i, c.text())
		nanos, err := strconv.ParseInt(m[1], 10, 64)
		require.NoError(t, err)
		c.start = time.Unix(0, nanos)
		c.clients, err = strconv.Atoi(m[2])
		require.NoError(t, err)
		c.pjrt = m[3] == "true"
		for _, msg := range ms {
			require.NotEqual(t, "error", msg.Type, "cell %d failed: %s", i, c.text())
		}
		first, _ := c.firstOutput(t)
		t.Logf("cell %d: first output %.2f s after its program started, %d clients, pjrt mapped %t:\n%s\nstatus: %q",
			i, first.Seconds(), c.clients, c.pjrt, c.text(), c.status(t))
		res[i] = c
	}

	// No backend in a cell that does not compute.
	for _, i := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8} {
		require.Zero(t, res[i].clients, "cell %d created a PJRT client", i)
		require.False(t, res[i].pjrt, "cell %d loaded a PJRT plugin", i)
	}
	require.Contains(t, res[0].text(), "backend: xla:cpu (XLA CPU plugin)", "the lab names its backend without creating it")
	for _, i := range []int{9, 10} {
		require.Equal(t, 1, res[i].clients, "cell %d computes: one client", i)
		require.True(t, res[i].pjrt, "cell %d", i)
	}

	// A cell speaks from its first second.
	bound := loadBound(t)
	for _, i := range []int{1, 2, 3, 4, 8, 10} {
		after, m := res[i].firstOutput(t)
		require.LessOrEqual(t, after, bound, "cell %d: its first output came %v after its program started", i, after)
		if i != 4 && i != 8 { // an evaluation cell's Load says its line first
			require.True(t, m.DisplayID != nil && strings.HasPrefix(*m.DisplayID, "cifarlab-status-"), "cell %d: the first output is the status line: %+v", i, m)
		}
	}
	first := res[1].status(t)
	require.Equal(t, `run "warm": starting the lab process (the kernel's first cell to train or evaluate)…`, strings.SplitAfter(first[0], "…")[0],
		"the first output is the status line, said before the lab process started")
	require.Equal(t, "display_data", res[1].messages[0].Type)
	compiling := 0
	for _, line := range first {
		if strings.HasPrefix(line, `run "warm": compiling the train step (first time for this shape)… `) {
			compiling++
		}
	}
	require.GreaterOrEqual(t, compiling, 2, "the compile's elapsed time is updated in place: %q", first)
	checkStatusTimeline(t, res[1], "warm")
	require.True(t, containsMatch(first, `^run "warm": step 1/20 running… \d+\.\d s$`), "%q", first)
	require.Regexp(t, `^run "warm": saved the checkpoint at step 20 in \d+\.\d\d s\nrun "warm": programs: compile train step \d+\.\d\d s · `+
		`compile variable initialisation \(train step\) \d+\.\d\d s$`, first[len(first)-1])

	// The same run again in the lab process compiles nothing: while its first step runs, its line
	// says so (not what the lab process prepared before it), and its last line lists no program.
	again := res[3].status(t)
	checkStatusTimeline(t, res[3], "warm")
	require.True(t, containsMatch(again, `^run "warm": step 1/20 running… \d+\.\d s$`), "%q", again)
	require.NotContains(t, again[len(again)-1], "programs:", "%q", again)
	require.NotContains(t, strings.Join(again, "\n"), "compil", "%q", again)

	batch := res[2].status(t)
	require.True(t, containsMatch(batch, `^run "warm": compiling the train step \(new program: batch size 64, not 32\)… \d+\.\d s$`),
		"a new shape says why it compiles: %q", batch)

	here := res[10].status(t)
	require.Equal(t, `run "here": compiling the train step (first time for this shape)…`, strings.SplitAfter(here[0], "…")[0], "%q", here)
	require.True(t, containsMatch(here, `^run "here": step 1/100 running… \d+\.\d s$`), "%q", here)
	// The line is redrawn every statusEvery (0.5 s) with the last step's loss: it shows one when
	// the 99 steps after the first took longer than that (about 2 s on the 2-core CI machine).
	if steps := stepsTook(t, res[10]); steps > 600*time.Millisecond {
		require.True(t, containsMatch(here, `^run "here": step \d+/100 · loss`), "steps took %v: %q", steps, here)
	} else {
		t.Logf("the steps took %v, less than a redraw: no loss line to check", steps)
	}
	checkStatusTimeline(t, res[10], "here")

	// Evaluation: its progress, then the kept result.
	ev := res[4].status(t)
	require.True(t, containsMatch(ev, `^run "warm": evaluating 300 images with TTA level 2 \(6 views\)… \d+/300 · \d+\.\d s$`), "%q", ev)
	require.Regexp(t, `^run "warm": evaluated 300 images with TTA level 2 \(6 views\) in \d+\.\d\d s\nrun "warm": programs: compile evaluation \(eval, TTA level 2\) \d+\.\d\d s$`, ev[len(ev)-1])
	result := regexp.MustCompile(`result: (.*)`).FindStringSubmatch(res[4].text())
	require.NotNil(t, result)
	for _, i := range []int{5, 7} {
		require.Empty(t, res[i].status(t), "cell %d evaluated nothing", i)
		require.Contains(t, res[i].text(), "not evaluated again", "cell %d", i)
		require.Contains(t, res[i].text(), "result: "+result[1], "cell %d: the same result", i)
	}
	require.NotContains(t, res[8].text(), "not evaluated again", "another TTA level evaluates")
	require.True(t, containsMatch(res[8].status(t), `evaluating 300 images with TTA level 1 \(2 views\)… `))
}

// stepsTook returns the time of the steps after the first, from the timeline the cell printed.
func stepsTook(t *testing.T, c labCell) time.Duration {
	t.Helper()
	m := regexp.MustCompile(`(?m)^timeline: .* · \d+ steps (\d+\.\d+) s`).FindStringSubmatch(c.text())
	require.NotNil(t, m, "the cell printed no steps in its timeline: %s", c.text())
	s, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return time.Duration(s * float64(time.Second))
}

// checkStatusTimeline checks the status line of a cell that trained the run called name
// against the timeline the cell printed (its "timeline:" line, the run's Timeline): each program
// the last line lists, each compile's end and the checkpoint it ends on, with the timeline's own
// duration; "first time for this shape" is said once per program at most.
func checkStatusTimeline(t *testing.T, c labCell, name string) {
	t.Helper()
	status := c.status(t)
	m := regexp.MustCompile(`(?m)^timeline: (.*)$`).FindStringSubmatch(c.text())
	require.NotNil(t, m, "the cell printed no timeline: %s", c.text())
	timeline := " · " + m[1] + " · "
	last := status[len(status)-1]
	if _, programs, ok := strings.Cut(last, "programs: "); ok {
		for _, p := range strings.Split(programs, " · ") {
			require.Contains(t, timeline, " · "+p+" · ", "the status's %q is the timeline's: %s", p, m[1])
		}
	}
	done := regexp.MustCompile(`^run "` + name + `": compiled the (train step|variable initialisation) \(.*\) in (\d+\.\d\d s)$`)
	for _, line := range status {
		if d := done.FindStringSubmatch(line); d != nil {
			label := "compile " + d[1]
			if d[1] == "variable initialisation" {
				label += " (train step)"
			}
			require.Contains(t, timeline, " · "+label+" "+d[2]+" · ", "%q is the timeline's: %s", line, m[1])
		}
	}
	shape := map[string]int{}
	for _, line := range status {
		if strings.Contains(line, "first time for this shape") && !strings.Contains(line, "…") {
			shape[strings.SplitN(line, " (", 2)[0]]++
		}
	}
	for program, n := range shape {
		require.Equal(t, 1, n, "%s: 'first time for this shape' once: %q", program, status)
	}
	if d := regexp.MustCompile(`^run "` + name + `": saved the checkpoint at step \d+ in (\d+\.\d\d s)`).FindStringSubmatch(last); d != nil {
		require.Contains(t, timeline, " · 1 checkpoint "+d[1]+" · ", "%q is the timeline's: %s", last, m[1])
	}
}

// containsMatch reports whether a line of lines matches the regular expression re.
func containsMatch(lines []string, re string) bool {
	r := regexp.MustCompile(re)
	for _, l := range lines {
		if r.MatchString(l) {
			return true
		}
	}
	return false
}
