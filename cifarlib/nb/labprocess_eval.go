package nb

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/cifarlab/cifarlab/cifarlib"
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
	// Precision is what the cell's model of the run computes in.
	Precision cifarlib.Precision
}

// evaluateInLabProcess evaluates ck (the run in dir) on recs in the kernel's lab process of
// client, when recs is the lab's Train or Test split and the evaluation is on one device; done is
// false otherwise (the cell evaluates in its own program). Its events go to the cell's status
// line st.
func (l *Lab) evaluateInLabProcess(ctx context.Context, client *labproc.Client, ck *training.LoadedCheckpoint, dir string,
	recs *data.Records, opts training.EvalOptions, st *training.Status) (res *training.EvalResult, err error, done bool) {
	split := ""
	switch {
	case recs == l.Test:
		split = data.SplitTest.String()
	case recs == l.Train:
		split = data.SplitTrain.String()
	}
	if client == nil || split == "" || opts.Devices > 1 {
		return nil, nil, false
	}
	var stamp int64
	if fi, err := os.Stat(filepath.Join(dir, "run.json")); err == nil {
		stamp = fi.ModTime().UnixNano()
	}
	if opts.TimelineFrom.IsZero() { // the evaluation's timeline counts from this cell's program start
		opts.TimelineFrom, _ = runs.ProcessStart()
	}
	payload, err := encode(evalRequest{Dir: absPath(dir), Step: ck.Info.Step, Stamp: stamp, Spec: l.Spec, DataDir: absPath(l.DataDir),
		Split: split, Options: opts, Precision: ck.Model.Precision})
	if err != nil {
		return nil, err, true
	}
	toLabProcess(st, client)
	msg, err := client.Do(ctx, &labproc.Request{Op: "evaluate", Payload: payload}, relayTo(st))
	if msg == nil || err != nil {
		return nil, cellError(err), true
	}
	res = new(training.EvalResult)
	if err := json.Unmarshal(msg.Payload, res); err != nil {
		return nil, fmt.Errorf("nb: the lab process's evaluation: %w", err), true
	}
	noteCompile(res.Timeline) // for CellTime
	return res, nil, true
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
func (s *labServer) evaluate(ctx context.Context, r *evalRequest, onEvent func(training.Event)) ([]byte, error) {
	lab, err := s.lab(r.Spec, r.DataDir, onEvent)
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
	run := h.run
	if r.Precision != "" && r.Precision != run.Model.Precision { // the cell's choice, for this evaluation
		m, own := *run.Model, *run
		m.Precision, own.Model = r.Precision, &m
		run = &own
	}
	r.Options.OnEvent = onEvent
	res, err := s.programs.Evaluate(ctx, run, recs, r.Options)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}
