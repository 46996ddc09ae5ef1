package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
)

// TaskStatus is where one task of a sweep stands: its run folder (the truth) joined with the
// Slurm queue.
type TaskStatus struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	// Run is the task's run folder as the runs table reads it (status, steps, test accuracy).
	Run runs.Info `json:"run"`
	// Queue is the task's state in Slurm's queue (PENDING, RUNNING, ...), "" when it is not
	// queued; Job is its Slurm id, "arrayid_index".
	Queue string `json:"queue,omitempty"`
	Job   string `json:"job,omitempty"`
	// State sums it up: done, running, pending, interrupted, failed or not started.
	State string `json:"state"`
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

// Status joins the tasks' run folders with Slurm's queue. The run folder is the truth: a run
// whose run.json says done is done whatever the queue says. When squeue fails (not on the
// cluster), the statuses come from the run folders alone and the error says why.
func (s *Sweep) Status(ctx context.Context, env []string) ([]TaskStatus, error) {
	queue, qerr := s.Queue(ctx, env)
	out := make([]TaskStatus, len(s.Tasks))
	for i, t := range s.Tasks {
		st := TaskStatus{Index: i, Name: t.Name, Run: runs.Read(s.RunDir(i))}
		if q, ok := queue[i]; ok {
			st.Queue, st.Job = q[0], q[1]
		}
		switch {
		case st.Run.Status == runs.RunDone:
			st.State = "done"
		case st.Queue == "RUNNING" || st.Queue == "COMPLETING":
			st.State = "running"
		case active(st.Queue):
			st.State = strings.ToLower(st.Queue)
		case st.Run.Status == runs.RunForeign || !exists(s.RunDir(i)):
			st.State = "not started"
		case st.Run.Status == runs.RunIncomplete:
			st.State = "killed" // run.json says running but no job runs it
		default:
			st.State = string(st.Run.Status)
		}
		out[i] = st
	}
	return out, qerr
}

// exists is true when path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// WriteStatus writes the status table: task, state, queue, steps, test accuracy.
func WriteStatus(w io.Writer, sts []TaskStatus) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "task\tname\tstate\tjob\tsteps\ttest acc")
	for _, st := range sts {
		acc := "-"
		if st.Run.HasTest {
			acc = fmt.Sprintf("%.4f", st.Run.TestAccuracy)
		}
		job := st.Job
		if job == "" {
			job = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\n", st.Index, st.Name, st.State, job, st.Run.Steps, acc)
	}
	return tw.Flush()
}
