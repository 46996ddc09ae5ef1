package nb

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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
	mu      sync.Mutex
	backend compute.Backend
	labs    map[string]*Lab
	// programs keeps the compiled programs of the runs trained and evaluated here: a Fit with
	// the same ProgramKey as an earlier one compiles nothing, nor does an evaluation of a run
	// of an architecture evaluated before.
	programs  training.Programs
	held      map[string]*heldRun // by run folder
	heldOrder []string            // the folders of held, the one evaluated longest ago first
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
	if l, ok := s.labs[key]; ok {
		return l, nil
	}
	onEvent(training.Event{Kind: training.EventData})
	l, err := New(spec, s.backend, dataDir)
	if err != nil {
		return nil, err
	}
	s.labs[key] = l
	return l, nil
}

// serveLabProcess is the lab process: it serves the kernel's cells until it ends, and
// returns its exit status.
func serveLabProcess() int {
	s := &labServer{labs: map[string]*Lab{}, held: map[string]*heldRun{}}
	reason, err := labproc.ServeFromEnv(s.handle, wireError)
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
		cfg := r.Config.Config
		cfg.Programs, cfg.OnEvent = &s.programs, onEvent
		res, err := l.fit(ctx, r.Name, cfg)
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

// toCell sends this package's output (Output, the displays) to the cell of a request until the
// returned function restores it.
func toCell(out *labproc.Stream, notebook bool) (restore func()) {
	saved, savedIO := Output, cellIO
	Output = out
	cellIO.notebook = func() bool { return notebook }
	cellIO.send = out.Display
	return func() { Output, cellIO = saved, savedIO }
}
