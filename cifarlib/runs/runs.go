package runs

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/internal/atomicfile"
)

// FileName is the file, in a run's folder (training.Settings.Checkpoint.Dir), where Train records
// the run: written when training starts (status running) and rewritten when it ends.
const FileName = "run.json"

// Status says where a run stands, as List finds it.
type Status string

// The statuses of a run. Train writes the first four into run.json; List adds the others
// for folders it can only partly read.
const (
	// RunRunning: training started and run.json was not rewritten since: the run is still
	// training, or its process died (List reports it as RunIncomplete).
	RunRunning Status = "running"
	// RunDone: trained to its target step (and evaluated, unless Settings.Eval.SkipFinal).
	RunDone Status = "done"
	// RunInterrupted: stopped early by its context (SIGINT); the checkpoint resumes it.
	RunInterrupted Status = "interrupted"
	// RunFailed: stopped by an error (a guard, a failed step); the error is recorded.
	RunFailed Status = "failed"
	// RunIncomplete: a run folder without a finished record: still training, killed, or written
	// by a cifarlab that kept no run.json.
	RunIncomplete Status = "incomplete"
	// RunBroken: run.json or history.json is there but cannot be read.
	RunBroken Status = "broken"
	// RunForeign: a folder of the runs folder with nothing cifarlab writes in it.
	RunForeign Status = "foreign"
)

// RecordFormat is the format of run.json: 2 records the run's settings (Settings); format 1,
// without the field, is that of the lab before them (commit 4805295 and earlier).
const RecordFormat = 2

// FormatError reports a file (or value) written in a format newer than this lab reads: a
// newer lab's. It says both, in one line.
type FormatError struct {
	// What is the file or value, e.g. "/runs/r/run.json".
	What string
	// Format is the one it is in, Lab the newest this lab reads.
	Format, Lab int
}

// Error implements error.
func (e *FormatError) Error() string {
	return fmt.Sprintf("%s is in format %d, newer than this lab reads (format %d): update cifarlab (git pull, then kernel/setup.sh) to read it",
		e.What, e.Format, e.Lab)
}

// Record is the content of run.json.
type Record struct {
	// Format is RecordFormat (0 in a run.json of format 1).
	Format int `json:"format,omitempty"`
	// Status is RunRunning, RunDone, RunInterrupted or RunFailed.
	Status Status `json:"status"`
	// Error is the error that stopped a failed run.
	Error string `json:"error,omitempty"`
	// Started is when this run (or its latest resume) started, Ended when it ended.
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	// WallTime is the time spent in Train, resumes added up (training, compilation and
	// evaluations).
	WallTime time.Duration `json:"wall_time_ns"`
	// What was trained, from the config: dataset id, architecture, head width, guards, devices,
	// global batch and target step.
	Dataset    string `json:"dataset"`
	Model      string `json:"model"`
	Head       int    `json:"head"`
	Guarded    bool   `json:"guarded"`
	Devices    int    `json:"devices"`
	BatchSize  int    `json:"batch_size"`
	TargetStep int    `json:"target_step"`
	// Precision is training.Settings.Compute.Precision ("" in a run.json written before it was recorded: f32).
	Precision cifarlib.Precision `json:"precision,omitempty"`
	// Recipe is the named recipe the run's settings came from (training.Settings.Recipe, e.g.
	// "airbench94"), "" for none.
	Recipe string `json:"recipe,omitempty"`
	// From is the run a transferred run was carried from (training.Settings.Transfer.From), "" otherwise.
	From string `json:"from,omitempty"`
	// ImportedFrom is the file an imported run's weights came from (WriteImportedRun: a
	// PyTorch state_dict), "" for a run the lab trained.
	ImportedFrom string `json:"imported_from,omitempty"`
	// Params are the hyperparameters the run was started with, by setting name
	// (training.Settings.Record.Params).
	Params map[string]string `json:"params,omitempty"`
	// Settings are the run's settings (training.Settings, resolved), which the training
	// package decodes; absent from a run.json of format 1.
	Settings json.RawMessage `json:"settings,omitempty"`
	// Values are every setting of the run, resolved, in the order of training's table of
	// settings (training.Fields), each with its name in words: what a comparison of runs names
	// them by (Differing, Labels). Absent from a run.json written before them: Params then say
	// the settings the run was given.
	Values []Setting `json:"values,omitempty"`
	// Job is where the run (its latest start) ran: host, GPUs and Slurm job (see JobInfo).
	Job *JobInfo `json:"job,omitempty"`
	// Data is what the run was trained on: synthetic or real (verified or not), layout, folder
	// and images per split (data.ProvenanceOf); nil in a run.json written before it was recorded.
	Data *data.Provenance `json:"data,omitempty"`
	// Warning is the first error writing the run folder's TensorBoard events (training went on
	// without them), "" when there was none.
	Warning string `json:"warning,omitempty"`
	// Timeline is where the run's (latest start's) wall time went, from its process start:
	// backend, data, each compile, the steps, evaluations and checkpoint writes.
	Timeline *Timeline `json:"timeline,omitempty"`
	// Result is the outcome of a run that ended without error (done or interrupted): the JSON
	// of the training package's training.Result, which decodes it (List reads the few numbers it shows).
	Result json.RawMessage `json:"result,omitempty"`
}

// Setting is one setting of a run (Record.Values): its name (a flag of `cifarlab train`, a
// sweep's axis), its name in words, and its value as the run resolved it, as the flag reads it.
type Setting struct {
	Name  string `json:"name"`
	Words string `json:"words"`
	Value string `json:"value"`
}

// ReadRecord reads dir/run.json. A folder without one gives an error that wraps
// os.ErrNotExist.
func ReadRecord(dir string) (*Record, error) {
	path := filepath.Join(dir, FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("runs: reading the run record: %w", err)
	}
	rec := &Record{}
	if err := json.Unmarshal(data, rec); err != nil {
		return nil, fmt.Errorf("runs: %s: %w: the file is not a cifarlib run record", path, err)
	}
	if rec.Format > RecordFormat {
		return nil, &FormatError{What: path, Format: rec.Format, Lab: RecordFormat}
	}
	switch rec.Status {
	case RunRunning, RunDone, RunInterrupted, RunFailed:
	default:
		return nil, fmt.Errorf("runs: %s: unknown status %q (want running, done, interrupted or failed)", path, rec.Status)
	}
	return rec, nil
}

// write saves the record to dir/run.json atomically (a temporary file, then rename).
func (r *Record) Write(dir string) error {
	r.Format = RecordFormat
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("runs: encoding the run record: %w", err)
	}
	return atomicfile.WriteFile(filepath.Join(dir, FileName), func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	})
}
