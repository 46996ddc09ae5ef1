package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
)

// TaskStatus is where one task of a sweep stands: its run folder (the truth) joined with the
// Slurm queue and the task's log.
type TaskStatus struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	// Run is the task's run folder as the runs table reads it (status, steps, test accuracy).
	Run runs.Info `json:"run"`
	// Queue is the task's state in Slurm's queue (PENDING, RUNNING, FAILED, ...), "" when it is
	// not queued; Job is its Slurm id, "arrayid_index".
	Queue string `json:"queue,omitempty"`
	Job   string `json:"job,omitempty"`
	// State sums it up: done, running, pending (or another queue state), interrupted, failed,
	// killed or not started.
	State string `json:"state"`
	// Reason says why a task that is not done stands where it does: a failed task's error (from
	// its run.json, else from its log), how to resume an interrupted one.
	Reason string `json:"reason,omitempty"`
}

// queueEntry is a job of `squeue --json` (Slurm 22.05's openapi v0.0.38; later versions write
// some numbers as {"set", "number"} objects, which flexInt reads too).
type queueEntry struct {
	ArrayJobID  flexInt `json:"array_job_id"`
	ArrayTaskID flexInt `json:"array_task_id"`
	ArrayTasks  string  `json:"array_task_string"`
	State       any     `json:"job_state"`
}

// flexInt is an integer written as a number or as {"set": true, "number": N}.
type flexInt struct {
	N  int64
	OK bool
}

func (f *flexInt) UnmarshalJSON(b []byte) error {
	var n int64
	if err := json.Unmarshal(b, &n); err == nil {
		*f = flexInt{n, true}
		return nil
	}
	var o struct {
		Set    bool  `json:"set"`
		Number int64 `json:"number"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return nil // another shape: not set
	}
	*f = flexInt{o.Number, o.Set}
	return nil
}

// Queue reads Slurm's queue for the sweep's job arrays (`squeue --json`): task index -> its
// state and job id. Without a Slurm submission it is empty.
func (s *Sweep) Queue(ctx context.Context, env []string) (map[int][2]string, error) {
	var ids []string
	for _, sub := range s.Submissions {
		if sub.JobID != "" {
			ids = append(ids, sub.JobID)
		}
	}
	out := map[int][2]string{}
	if len(ids) == 0 {
		return out, nil
	}
	text, err := runSlurm(ctx, env, []string{"squeue", "--json", "--jobs=" + strings.Join(ids, ",")})
	if err != nil {
		return out, err
	}
	var q struct {
		Jobs []queueEntry `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(text), &q); err != nil {
		return out, fmt.Errorf("sweep: reading squeue --json: %w", err)
	}
	for _, j := range q.Jobs {
		state := stateString(j.State)
		var tasks []int
		if j.ArrayTasks != "" {
			tasks = parseArraySpec(j.ArrayTasks)
		} else if j.ArrayTaskID.OK && j.ArrayTaskID.N >= 0 && j.ArrayTaskID.N < 1<<31 {
			tasks = []int{int(j.ArrayTaskID.N)}
		}
		for _, t := range tasks {
			out[t] = [2]string{state, fmt.Sprintf("%d_%d", j.ArrayJobID.N, t)}
		}
	}
	return out, nil
}

// ToRun are the tasks to submit or run now: those whose run.json does not say done and that
// are not in Slurm's queue (pending or running from an earlier submission). When the sweep has
// Slurm submissions and squeue cannot be read, it refuses rather than train a task twice.
func (s *Sweep) ToRun(ctx context.Context, env []string) ([]int, error) {
	queue, err := s.Queue(ctx, env)
	if err != nil {
		return nil, fmt.Errorf("%w: the sweep has Slurm jobs and their tasks may still be queued; run this where squeue works", err)
	}
	var out []int
	for _, i := range s.Unfinished() {
		if !active(queue[i][0]) {
			out = append(out, i)
		}
	}
	return out, nil
}

// ended are the job states squeue still lists for a while (MinJobAge) after a job ended.
var ended = []string{"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}

// active is true for a job state of a job that is queued or running (not "" nor ended).
func active(state string) bool {
	if state == "" {
		return false
	}
	for st := range strings.SplitSeq(state, ",") {
		if slices.Contains(ended, st) {
			return false
		}
	}
	return true
}

// stateString is job_state: a string, or a list of strings in newer Slurm.
func stateString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, p := range v {
			parts = append(parts, fmt.Sprint(p))
		}
		return strings.Join(parts, ",")
	}
	return ""
}

// Status joins the tasks' run folders with Slurm's queue and the tasks' logs. The run folder
// is the truth: a run whose run.json says done is done whatever the queue says. When squeue
// fails (not on the cluster), the statuses come from the run folders alone and the error says
// why.
func (s *Sweep) Status(ctx context.Context, env []string) ([]TaskStatus, error) {
	queue, qerr := s.Queue(ctx, env)
	out := make([]TaskStatus, len(s.Tasks))
	for i, t := range s.Tasks {
		st := TaskStatus{Index: i, Name: t.Name, Run: runs.Read(s.RunDir(i))}
		if q, ok := queue[i]; ok {
			st.Queue, st.Job = q[0], q[1]
		}
		st.State, st.Reason = taskState(st.Run, st.Queue, exists(s.RunDir(i)), taskError(s.logPath(i)))
		if st.State == "interrupted" {
			st.Reason = fmt.Sprintf("checkpoint at step %d: resume with `%s`", st.Run.Steps, s.Resubmit())
		}
		out[i] = st
	}
	return out, qerr
}

// taskState is a task's state and its reason, from its run folder (run; started: the folder
// exists), its state in Slurm's queue ("" when not queued) and the error its log ends with.
func taskState(run runs.Info, queue string, started bool, logErr string) (state, reason string) {
	ended := queue != "" && !active(queue) && queue != "COMPLETED"
	if logErr == "" && ended {
		logErr = "Slurm says " + queue + " (see the task's log)"
	}
	switch {
	case run.Status == runs.RunDone:
		return "done", ""
	case queue == "COMPLETING" && (run.Status == runs.RunInterrupted || run.Status == runs.RunFailed):
		return string(run.Status), run.Reason // its job is ending
	case queue == "RUNNING" || queue == "COMPLETING":
		return "running", ""
	case active(queue):
		return strings.ToLower(queue), ""
	case run.Status == runs.RunInterrupted:
		return "interrupted", run.Reason
	case run.Status == runs.RunFailed:
		return "failed", run.Reason
	case ended && queue != "FAILED":
		return strings.ToLower(queue), logErr
	case ended || (logErr != "" && (!started || run.Status == runs.RunForeign)):
		return "failed", logErr // it failed before its run folder said anything
	case !started || run.Status == runs.RunForeign:
		return "not started", ""
	case run.Status == runs.RunIncomplete:
		return "killed", run.Reason // run.json says running but no job runs it
	}
	return string(run.Status), run.Reason
}

// logPath is the log of task i: its output under Slurm and here.
func (s *Sweep) logPath(i int) string {
	return filepath.Join(Dir(s.runs, s.Name), "logs", strconv.Itoa(i)+".out")
}

// taskErrorPrefix starts the line cifarlab writes when `cifarlab sweep task` fails.
const taskErrorPrefix = "cifarlab sweep: "

// taskError is the last error the task's log at path holds ("" when none): what the task
// printed when it failed, e.g. before it wrote its run.json.
func taskError(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	for _, l := range slices.Backward(lines) {
		if rest, ok := strings.CutPrefix(l, taskErrorPrefix); ok {
			return rest
		}
	}
	return ""
}

// exists is true when path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// WriteStatus writes the status table: task, state, job, steps, test accuracy (in percent, as
// the runs table writes it) and the reason of a task that is not done.
func WriteStatus(w io.Writer, sts []TaskStatus) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "task\tname\tstate\tjob\tsteps\ttest acc\treason")
	for _, st := range sts {
		acc := "-"
		if st.Run.HasTest {
			acc = fmt.Sprintf("%.2f%%", 100*st.Run.TestAccuracy)
		}
		job := st.Job
		if job == "" {
			job = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", st.Index, st.Name, st.State, job, st.Run.Steps, acc, st.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(b.String()) {
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}
