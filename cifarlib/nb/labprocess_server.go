package nb

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labproc"
	"github.com/cifarlab/cifarlab/cifarlib/training"

	"github.com/gomlx/compute"
)

// labServer is the lab process's state: the backend (created by the first request), and the
// labs of each data folder and dataset it was asked for, with their data loaded once.
type labServer struct {
	mu       sync.Mutex
	backend  compute.Backend
	labs     map[string]*Lab
	labOrder []string // the keys of labs, the one used longest ago first
	// programs keeps the compiled programs of the runs trained and evaluated here: a Fit with
	// the same ProgramKey as an earlier one compiles nothing, nor does an evaluation of a run
	// of an architecture evaluated before. It keeps the sets of maxProgramSets configurations.
	programs  training.Programs
	heldMu    sync.Mutex
	held      map[string]*heldRun // by run folder
	heldOrder []string            // the folders of held, the one evaluated longest ago first

	// current is the Fit in flight (nil: none), for a request that must wait for it.
	currentMu sync.Mutex
	current   *fitInFlight
}

// fitInFlight is a Fit the lab process runs: its run, where it is, and whether its cell
// interrupted it (it then finishes its step and saves).
type fitInFlight struct {
	name     string
	watch    *training.StepWatch
	stopping bool
}

// What the lab process keeps, and for how long (docs/lab-process.md):
//
//   - the backend, for its life;
//   - the compiled programs (training.Programs) of the last maxProgramSets training
//     configurations (each with its model, its Store and the variables' initial values) and
//     the evaluation programs of each architecture evaluated, for its life;
//   - the data of the last maxLabs data folders and datasets cells used (Lab: the splits' bytes,
//     about 180 MB for CIFAR-10's 60000 images), and the weights of the last maxHeld runs
//     loaded for evaluation, until it has been labproc.TrimEnv (10 minutes) without a cell;
//   - what a request freed (XLA's buffers of a training step: gigabytes at batch 1024 for
//     airbench94) is given back to the system labproc.ReleaseAfter (5 s) after it.
const (
	maxProgramSets = 2
	maxLabs        = 2
)

// rest frees what the lab process need not hold while no cell asks anything (labproc.Server.Rest).
func (s *labServer) rest(level labproc.RestLevel) {
	if level == labproc.Drop {
		s.mu.Lock()
		clear(s.labs)
		s.labOrder = nil
		s.mu.Unlock()
		s.heldMu.Lock()
		clear(s.held)
		s.heldOrder = nil
		s.heldMu.Unlock()
	}
	labproc.ReleaseMemory()
}

// lab returns the lab of spec and dataDir, loading it the first time; onEvent hears of the
// backend's creation and the data's loading.
func (s *labServer) lab(spec data.Spec, dataDir string, onEvent func(training.Event)) (*Lab, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.backend == nil {
		onEvent(training.Event{Kind: training.EventBackend})
		b, err := backends.New(backends.Auto)
		if err != nil {
			return nil, err
		}
		s.backend = b
	}
	key := dataDir + "\x00" + spec.ID()
	s.labOrder = append(slices.DeleteFunc(s.labOrder, func(k string) bool { return k == key }), key)
	if l, ok := s.labs[key]; ok {
		return l, nil
	}
	onEvent(training.Event{Kind: training.EventData})
	l, err := New(spec, s.backend, dataDir)
	if err != nil {
		return nil, err
	}
	s.labs[key] = l
	for len(s.labOrder) > maxLabs { // the data used longest ago goes
		delete(s.labs, s.labOrder[0])
		s.labOrder = s.labOrder[1:]
	}
	return l, nil
}

// serveLabProcess is the lab process: it serves the kernel's cells until it ends, and
// returns its exit status.
func serveLabProcess() int {
	s := &labServer{labs: map[string]*Lab{}, held: map[string]*heldRun{}, programs: training.Programs{MaxSets: maxProgramSets}}
	reason, err := labproc.ServeFromEnv(s.handle, wireError, s.waiting, s.rest)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cifarlab lab process:", err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "cifarlab lab process: ended:", reason)
	return 0
}

// handle serves one request, its output going to out.
func (s *labServer) handle(ctx context.Context, req *labproc.Request, out *labproc.Stream) ([]byte, error) {
	switch req.Op {
	case "fit":
		var r fitRequest
		if err := decode(req.Payload, &r); err != nil {
			return nil, fmt.Errorf("nb: lab process: a fit request it cannot read: %w", err)
		}
		onEvent := eventSender(out)
		onEvent(training.Event{Kind: training.EventPhase, Text: fmt.Sprintf("preparing the run in the lab process (pid %d)", os.Getpid())})
		lab, err := s.lab(r.Spec, r.DataDir, onEvent)
		if err != nil {
			return nil, err
		}
		l := *lab
		l.RunsDir = r.RunsDir
		defer toCell(out, r.InNotebook)()
		ctx, stopped := s.watchFit(ctx, &l, r.Name, out)
		defer stopped()
		res, err := l.fit(ctx, r.Name, r.Settings, training.Env{Programs: &s.programs, Clock: r.Clock, OnEvent: onEvent})
		var reply fitReply
		if res != nil {
			reply.Result, _ = json.Marshal(res)
			if res.History != nil {
				reply.History, _ = json.Marshal(res.History)
				_, reply.LiveDrawn = drawnLive.Load(res.History)
				drawnLive.Delete(res.History)
			}
		}
		payload, eerr := encode(reply)
		if eerr != nil {
			return nil, eerr
		}
		return payload, err
	}
	if req.Op == "evaluate" {
		var r evalRequest
		if err := decode(req.Payload, &r); err != nil {
			return nil, fmt.Errorf("nb: lab process: an evaluate request it cannot read: %w", err)
		}
		return s.evaluate(ctx, &r, eventSender(out))
	}
	return nil, fmt.Errorf("nb: lab process: unknown request %q (a cell of other code?)", req.Op)
}

// watchFit follows the Fit of the run called name that the lab process starts under ctx: the
// context it returns reports its steps (training.StepWatch). When ctx ends first (the cell was
// interrupted, or is gone), the cell is told at once what the lab process does now (a
// KindStopping message: it finishes the current step and saves; the cell says it when GoNB
// would kill it before the result comes), and the run's lock says so too, for a later cell
// that touches the run (Lab.Load waits for the save). stopped ends the watch, when Fit returns.
func (s *labServer) watchFit(ctx context.Context, l *Lab, name string, out *labproc.Stream) (context.Context, func()) {
	f := &fitInFlight{name: name, watch: new(training.StepWatch)}
	s.currentMu.Lock()
	s.current = f
	s.currentMu.Unlock()
	finished := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-finished:
			return
		}
		s.currentMu.Lock()
		f.stopping = true
		now := f.watch.Now()
		s.currentMu.Unlock()
		if path, err := l.lockPath(name); err == nil {
			_ = labproc.WriteNote(path, savingNote(now))
		}
		payload, _ := encode(now)
		_ = out.Send(&labproc.Message{Kind: labproc.KindStopping, Text: savingError(name, "", now).Error(), Payload: payload})
	}()
	return training.WithStepWatch(ctx, f.watch), func() {
		close(finished)
		s.currentMu.Lock()
		if s.current == f {
			s.current = nil
		}
		s.currentMu.Unlock()
	}
}

// waiting says what a request waits for while another is in flight (labproc.Server.Waiting).
func (s *labServer) waiting() string {
	s.currentMu.Lock()
	defer s.currentMu.Unlock()
	f := s.current
	switch {
	case f == nil:
		return "lab process: busy with an earlier cell's request; this cell waits for it"
	case f.stopping:
		return fmt.Sprintf("lab process: run %q is still saving after its interrupt (%s); this cell waits for it", f.name, savingNote(f.watch.Now()))
	}
	now := f.watch.Now()
	return fmt.Sprintf("lab process: busy with an earlier cell's lab.Fit(%q) (step %d of %d); this cell waits for it", f.name, now.Step, now.Target)
}

// toCell sends this package's output (Output, the displays) to the cell of a request until the
// returned function restores it.
func toCell(out *labproc.Stream, notebook bool) (restore func()) {
	saved, savedIO := Output, cellIO
	Output = out
	cellIO.notebook = func() bool { return notebook }
	cellIO.send = out.Display
	return func() { Output, cellIO = saved, savedIO }
}
