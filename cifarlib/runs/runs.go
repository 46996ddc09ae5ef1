package runs

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

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

// RecordFormat is the format of run.json: 3 holds the run's settings once (Settings: every
// setting of its table, resolved, and those it was given). Format 2 (commits 4805295 to f035eac)
// held them four ways: fields of the record, the params given, training's Settings in JSON and
// the table's values; format 1 (4805295 and earlier) only the fields and the params. ReadRecord
// reads all three into this form (record_legacy.go).
const RecordFormat = 3

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
	// Settings are the run's settings, once: every setting of the table it was trained with, as
	// the run resolved it, and those it was given.
	Settings RunSettings `json:"settings"`
	// ImportedFrom is the file an imported run's weights came from (WriteImportedRun: a
	// PyTorch state_dict), "" for a run the lab trained.
	ImportedFrom string `json:"imported_from,omitempty"`
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

// RunSettings are a run's settings as run.json holds them: the training package's Settings,
// written by its table of settings (training.Fields), each row with its value, and what the
// run was given. They are a run's settings whatever the lab that reads them: a comparison of
// runs reads them by name, in words and knowing which are bookkeeping, from the record alone.
type RunSettings struct {
	// Values are every setting of the table, in its order, with its value as the run resolved
	// it (the transfer source's architecture, the head's width, the steps of a length in epochs,
	// the devices' count), as the setting reads it (training.Field.Get).
	Values []Setting `json:"values"`
	// Given are the settings the run was given, as written (its flags, a sweep task's grid
	// values: training.Settings.Record.Params), by name; nil: none recorded.
	Given map[string]string `json:"given,omitempty"`
}

// Setting is one setting of a run (RunSettings.Values): its name (a flag of `cifarlab train`, a
// sweep's axis), its name in words, its value, and whether it is bookkeeping.
type Setting struct {
	Name  string `json:"name"`
	Words string `json:"words"`
	Value string `json:"value"`
	// Bookkeeping: the setting says how the run was kept and watched (where it was written,
	// how often it saved, logged, recorded and validated), not what it trained: a comparison of
	// runs leaves it out.
	Bookkeeping bool `json:"bookkeeping,omitempty"`
}

// Value returns the value of the setting called name, and whether the run recorded it.
func (r RunSettings) Value(name string) (string, bool) {
	for _, v := range r.Values {
		if v.Name == name {
			return v.Value, true
		}
	}
	return "", false
}

// Set sets the value of the setting called name, added at the end when the run did not record
// it.
func (r *RunSettings) Set(name, value string) {
	for i, v := range r.Values {
		if v.Name == name {
			r.Values[i].Value = value
			return
		}
	}
	r.Values = append(r.Values, Setting{Name: name, Value: value})
}

// ReadRecord reads dir/run.json. A folder without one gives an error that wraps
// os.ErrNotExist.
func ReadRecord(dir string) (*Record, error) {
	path := filepath.Join(dir, FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("runs: reading the run record: %w", err)
	}
	rec, err := decodeRecord(data)
	if err != nil {
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
