package runs

import (
	"os"
	"strconv"
)

// JobInfo is where a run ran, as run.json records it: the host, the GPUs it was given and,
// under Slurm, the job, from the environment Slurm sets for a batch job (SLURM_JOB_ID,
// SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID, SLURM_RESTART_COUNT), like Lightning's
// SLURMEnvironment reads it.
type JobInfo struct {
	// Host is the machine's host name.
	Host string `json:"host"`
	// GPUs is $CUDA_VISIBLE_DEVICES ("" when unset: every GPU of the host, or none).
	GPUs string `json:"gpus,omitempty"`
	// JobID is $SLURM_JOB_ID; ArrayJobID and TaskID are the job array's id and the task's index
	// ($SLURM_ARRAY_JOB_ID, $SLURM_ARRAY_TASK_ID; TaskID is -1 outside an array).
	JobID      string `json:"slurm_job_id,omitempty"`
	ArrayJobID string `json:"slurm_array_job_id,omitempty"`
	TaskID     int    `json:"slurm_array_task_id"`
	// Restarts counts the starts of the run after its first: Slurm's $SLURM_RESTART_COUNT
	// (requeues) when set, else the resumes from its checkpoint.
	Restarts int `json:"restarts"`
}

// CurrentJob is the JobInfo of this process, from its environment.
func CurrentJob() *JobInfo {
	j := &JobInfo{GPUs: os.Getenv("CUDA_VISIBLE_DEVICES"), JobID: os.Getenv("SLURM_JOB_ID"),
		ArrayJobID: os.Getenv("SLURM_ARRAY_JOB_ID"), TaskID: -1}
	j.Host, _ = os.Hostname()
	if id, err := strconv.Atoi(os.Getenv("SLURM_ARRAY_TASK_ID")); err == nil {
		j.TaskID = id
	}
	if n, err := strconv.Atoi(os.Getenv("SLURM_RESTART_COUNT")); err == nil {
		j.Restarts = n
	}
	return j
}

// Resumed counts a resume of the run whose previous start ran as prev, outside Slurm (where
// SLURM_RESTART_COUNT counts the requeues).
func (j *JobInfo) Resumed(prev *JobInfo) {
	if _, slurm := os.LookupEnv("SLURM_RESTART_COUNT"); slurm {
		return
	}
	j.Restarts = 1
	if prev != nil {
		j.Restarts = prev.Restarts + 1
	}
}
