package nb

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labproc"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// evalRequest is an Evaluate of a loaded run as it travels to the lab process: the run's
// folder and which checkpoint (its step, and when run.json was written: a run trained again
// is another one), the lab's split by name, and the options.
type evalRequest struct {
	Dir     string
	Step    int
	Stamp   int64
	Spec    data.Spec
	DataDir string
	Split   string
	Options training.EvalOptions
}

// evaluateInLabProcess makes ck's Evaluate of the lab's Train or Test split run in the
// kernel's lab process (when Fit would: labClient), which keeps the run's weights, the data and
// the compiled evaluation; any other records are evaluated in this program, as before.
func (l *Lab) evaluateInLabProcess(ck *training.LoadedCheckpoint, dir string) {
	client := l.labClient(training.Config{})
	if client == nil || ck.Trained == nil {
		return
	}
	var stamp int64
	if fi, err := os.Stat(filepath.Join(dir, "run.json")); err == nil {
		stamp = fi.ModTime().UnixNano()
	}
	t := ck.Trained
	t.EvaluateWith = func(ctx context.Context, recs *data.Records, opts training.EvalOptions) (*training.EvalResult, error) {
		split := ""
		switch {
		case recs == l.Test:
			split = data.SplitTest.String()
		case recs == l.Train:
			split = data.SplitTrain.String()
		}
		if split == "" || opts.Devices > 1 {
			return training.Evaluate(ctx, t.Backend, t.Model, t.Store, recs, opts)
		}
		if opts.TimelineFrom.IsZero() { // the evaluation's timeline counts from this cell's program start
			opts.TimelineFrom, _ = runs.ProcessStart()
		}
		payload, err := encode(evalRequest{Dir: absPath(dir), Step: ck.Info.Step, Stamp: stamp, Spec: l.Spec, DataDir: absPath(l.DataDir), Split: split, Options: opts})
		if err != nil {
			return nil, err
		}
		msg, err := client.Do(ctx, &labproc.Request{Op: "evaluate", Payload: payload}, relay)
		if msg == nil || err != nil {
			return nil, cellError(err)
		}
		res := new(training.EvalResult)
		if err := json.Unmarshal(msg.Payload, res); err != nil {
			return nil, fmt.Errorf("nb: the lab process's evaluation: %w", err)
		}
		noteCompile(res.Timeline) // for CellTime
		return res, nil
	}
}

// heldRun is a run the lab process loaded to evaluate (its weights read once per checkpoint);
// the evaluation program is the lab process's Programs', shared by the runs of an architecture.
type heldRun struct {
	key string
	run *training.Trained
}

// maxHeld is how many runs the lab process keeps loaded for evaluation; the one evaluated
// longest ago is let go first.
const maxHeld = 4

// hold keeps h as the run in dir, letting go of the one evaluated longest ago beyond maxHeld
// (s.heldMu held).
func (s *labServer) hold(dir string, h *heldRun) {
	s.held[dir] = h
	s.heldOrder = append(slices.DeleteFunc(s.heldOrder, func(d string) bool { return d == dir }), dir)
	if len(s.heldOrder) > maxHeld {
		delete(s.held, s.heldOrder[0])
		s.heldOrder = s.heldOrder[1:]
	}
}

// evaluate serves an evalRequest: the run is loaded once per checkpoint and kept, and evaluated
// with the evaluation program the lab process keeps for its architecture (training.Programs).
func (s *labServer) evaluate(ctx context.Context, r *evalRequest) ([]byte, error) {
	lab, err := s.lab(r.Spec, r.DataDir)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%d/%d", r.Step, r.Stamp)
	s.heldMu.Lock()
	h := s.held[r.Dir]
	if h != nil && h.key == key {
		s.hold(r.Dir, h) // the most recent now
	}
	s.heldMu.Unlock()
	if h == nil || h.key != key {
		ck, err := training.LoadCheckpoint(r.Dir, s.backend)
		if err != nil {
			return nil, err
		}
		h = &heldRun{key: key, run: ck.Trained}
		s.heldMu.Lock()
		s.hold(r.Dir, h)
		s.heldMu.Unlock()
	}
	recs := lab.Test
	if r.Split == data.SplitTrain.String() {
		recs = lab.Train
	}
	res, err := s.programs.Evaluate(ctx, h.run, recs, r.Options)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}
