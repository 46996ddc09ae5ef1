package nb

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labproc"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"
	"github.com/cifarlab/cifarlab/internal/repo"
)

// LabProcessEnv turns the lab process off when set to "0": every cell then trains in its own
// program, as the CLI does. LabIdleEnv is how long the lab process waits for a cell before it
// ends and frees the device (a Go duration; default 30m).
//
// The lab process is the kernel's: GoNB runs every cell as a new program, so a cell's Fit
// would create the backend, read the data and compile its programs again. Instead, the first
// Fit of a notebook starts the cell's own binary again as a process that outlives the cell (one
// per kernel, in GoNB's folder of that kernel, talking over a unix socket only its user can
// open), and every Fit of a later cell runs there: its log, live charts and errors stream into
// the cell as before, and its result comes back. It ends with its kernel (restart or shutdown),
// after LabIdleEnv without a cell, or when a cell was built from other library code or selects
// another backend (it is then replaced). Killing it loses time, never work: the run folder
// holds every result.
const (
	LabProcessEnv = labproc.Env
	LabIdleEnv    = labproc.IdleEnv
)

// inLabProcess is true in the lab process itself: its Fit calls run where they are.
var inLabProcess = os.Getenv(labproc.ServeEnv) != ""

func init() {
	if inLabProcess {
		os.Exit(serveLabProcess())
	}
}

// RunBusyError is returned by Fit when another program trains the same run.
type RunBusyError struct {
	// Run is the run's name; PID the process that trains it.
	Run string
	PID int
}

// Error implements error.
func (e *RunBusyError) Error() string {
	return fmt.Sprintf("nb: run %q is being trained by another program (pid %d: another notebook's kernel or lab process, or `cifarlab train`): "+
		"wait for it to end, or give this lab.Fit another name", e.Run, e.PID)
}

// lockRun locks the run called name for this program until unlock: a lock file next to its
// folder (RunsDir/.NAME.lock; Fit removes and re-creates the folder itself), held with flock,
// so that a killed program holds nothing.
func (l *Lab) lockRun(name string) (unlock func(), err error) {
	if err := os.MkdirAll(l.RunsDir, 0o755); err != nil {
		return nil, fmt.Errorf("nb: creating the runs folder: %w", err)
	}
	path, err := l.lockPath(name)
	if err != nil {
		return nil, err
	}
	unlock, err = labproc.Lock(path)
	var locked *labproc.LockedError
	if errors.As(err, &locked) {
		return nil, &RunBusyError{Run: name, PID: locked.PID}
	}
	return unlock, err
}

// lockPath is the lock file of the run called name (lockRun).
func (l *Lab) lockPath(name string) (string, error) {
	if _, err := l.RunDir(name); err != nil {
		return "", err
	}
	return filepath.Join(l.RunsDir, "."+name+".lock"), nil
}

// waitSaved waits while the kernel's lab process (or another program) saves the run called
// name after its cell was interrupted (the run's lock says so: watchFit), saying so in one line:
// a later cell that loads the run gets it as saved. Interrupted while it waits, it returns an
// error that says the run is still saving.
func (l *Lab) waitSaved(name string) error {
	path, err := l.lockPath(name)
	if err != nil {
		return err
	}
	h := labproc.Holder(path)
	if h == nil || h.Note == "" {
		return nil
	}
	fmt.Fprintf(output(), "run %q is still saving after its interrupt (%s, in process %d); waiting for it\n", name, h.Note, h.PID)
	ctx, stop := training.InterruptContext(context.Background())
	defer stop()
	began := time.Now()
	for t := time.NewTicker(100 * time.Millisecond); ; {
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("nb: run %q is still saving after its interrupt (%s, in process %d): run this cell again once it is saved", name, h.Note, h.PID)
		case <-t.C:
		}
		if labproc.Holder(path) == nil {
			t.Stop()
			fmt.Fprintf(output(), "run %q: saved (waited %.1fs)\n", name, time.Since(began).Seconds())
			return nil
		}
	}
}

// fitRequest is a Fit call as it travels to the lab process: the run's settings as they are
// (training.Settings travel whole; the Env stays in the cell, see labClient), where its timeline
// starts, and the lab's data and runs folders.
type fitRequest struct {
	Name       string
	Settings   training.Settings
	Clock      time.Time
	Spec       data.Spec
	DataDir    string
	RunsDir    string
	InNotebook bool
}

// fitReply is Fit's result from the lab process: the Result and History as JSON (as run.json
// and history.json hold them), and whether its live view drew the charts to the end.
type fitReply struct {
	Result, History []byte
	LiveDrawn       bool
}

// labClient returns the client of the kernel's lab process when a run in env goes there: in a
// GoNB cell, with the lab process on, a lab from Open (the kernel's backend) and an Env with
// nothing of the cell's (no hook, writer, plot or progress bar; the lab's own backend and
// splits). Otherwise nil: the run stays in the cell's program, as before.
func (l *Lab) labClient(env training.Env) *labproc.Client {
	switch {
	case inLabProcess, !l.opened, !InNotebook(), labproc.Off(), os.Getenv(labproc.GoNBTmpEnv) == "",
		env.OnPoint != nil, env.OnEvent != nil, env.Log != nil, env.Plot, env.Progress == training.ProgressOn,
		env.Backend != nil && env.Backend != l.Backend,
		(env.Train != nil || env.Test != nil) && (env.Train != l.Train || env.Test != l.Test):
		return nil
	}
	folder, err := labproc.Folder(os.Getenv(labproc.GoNBTmpEnv))
	if err == nil {
		var fp string
		if fp, err = labproc.Fingerprint(repo.Dir()); err == nil {
			return &labproc.Client{Folder: folder, Fingerprint: fp, Note: output()}
		}
	}
	fmt.Fprintf(output(), "lab process: %v; running in this cell's program\n", err)
	return nil
}

// fitInLabProcess runs Fit in the kernel's lab process when it can (labClient), its events
// shown on the cell's status line st; done is false when Fit must run in this program instead.
func (l *Lab) fitInLabProcess(name string, s training.Settings, env training.Env, st *training.Status) (res *training.Result, err error, done bool) {
	client := l.labClient(env)
	if client == nil {
		return nil, nil, false
	}
	toLabProcess(st, client)
	clock := env.Clock
	if clock.IsZero() { // the run's timeline counts from this cell's program start
		clock, _ = runs.ProcessStart()
	}
	s.Transfer.From = absPath(s.Transfer.From) // the lab process has its own working folder
	payload, err := encode(fitRequest{Name: name, Settings: s, Clock: clock, Spec: l.Spec, DataDir: absPath(l.DataDir),
		RunsDir: absPath(l.RunsDir), InNotebook: InNotebook()})
	if err != nil {
		return nil, fmt.Errorf("nb: sending lab.Fit(%q) to the lab process: %w", name, err), true
	}
	ctx, stop := training.InterruptContext(context.Background())
	defer stop()
	msg, err := client.Do(ctx, &labproc.Request{Op: "fit", Payload: payload}, relayTo(st))
	var left *labproc.LeftError
	if errors.As(err, &left) { // interrupted in a step longer than GoNB waits: the lab process saves it
		dir, _ := l.RunDir(name)
		var now training.StepNow
		if left.Stopping == nil || decode(left.Stopping.Payload, &now) != nil {
			now = training.StepNow{}
		}
		return nil, savingError(name, dir, now), true
	}
	if msg == nil {
		if errors.Is(err, labproc.ErrNotStarted) {
			fmt.Fprintf(output(), "lab process: %v; training in this cell's program\n", err)
			return nil, nil, false
		}
		return nil, fmt.Errorf("nb: lab.Fit(%q): %w", name, err), true
	}
	res, err = l.fitResult(name, msg.Payload, err)
	return res, err, true
}

// fitResult is the result of the lab process's fit of the run called name: its reply (the
// Result and History) with the trained weights, read here from the checkpoint the run saved,
// lazily (res.Logits, res.Evaluate), and its error as the cell gets it.
func (l *Lab) fitResult(name string, payload []byte, runErr error) (*training.Result, error) {
	var reply fitReply
	if derr := decode(payload, &reply); derr != nil || reply.Result == nil {
		return nil, cellError(runErr)
	}
	res := new(training.Result)
	if jerr := json.Unmarshal(reply.Result, res); jerr != nil {
		return nil, fmt.Errorf("nb: lab.Fit(%q): the lab process's result: %w", name, jerr)
	}
	if reply.History != nil {
		res.History = new(runs.History)
		if jerr := json.Unmarshal(reply.History, res.History); jerr != nil {
			return nil, fmt.Errorf("nb: lab.Fit(%q): the lab process's history: %w", name, jerr)
		}
		if reply.LiveDrawn {
			drawnLive.Store(res.History, struct{}{})
		}
	}
	if dir, _ := l.RunDir(name); res.CheckpointDir != "" {
		ck, lerr := training.LoadCheckpoint(dir, l.Backend)
		if lerr != nil {
			return nil, fmt.Errorf("nb: lab.Fit(%q): loading what the lab process trained: %w", name, lerr)
		}
		res.Trained = ck.Trained
	}
	return res, cellError(runErr)
}

// absPath is path made absolute in this program's working folder ("" stays "").
func absPath(path string) string {
	if path == "" {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// relayTo passes the messages of the lab process on to the cell: its output, its displays, and
// its events to the cell's status line st (nil: none).
func relayTo(st *training.Status) func(*labproc.Message) {
	return func(m *labproc.Message) {
		switch m.Kind {
		case labproc.KindText:
			fmt.Fprint(output(), m.Text)
		case labproc.KindDisplay:
			if m.Display != nil && InNotebook() {
				cellIO.send(m.Display)
			}
		case labproc.KindEvent:
			var e training.Event
			if st != nil && decode(m.Payload, &e) == nil {
				st.Event(e)
			}
		}
	}
}

// sentinels are the errors a cell may look for with errors.Is in what Fit returns: a lab
// process's error carries which of them it wraps (remoteError). A variable's initialiser, not an
// init function: the lab process serves from nb's init, before the init functions after it.
var sentinels = func() map[string]error {
	m := map[string]error{}
	for _, e := range []error{ErrNoRun, ErrInterrupted, cifarlib.ErrHeadMismatch, cifarlib.ErrInputContract, cifarlib.ErrNoBackend,
		checkpoints.ErrNoCheckpoint, data.ErrLabelOutOfRange, data.ErrNoRecords, backends.ErrBackend, backends.ErrDeviceMemory,
		backends.ErrNoGPU, backends.ErrCUDARuntime, backends.ErrDevices} {
		m[e.Error()] = e
	}
	return m
}()

// remoteError is an error of the lab process in the cell: its text, and errors.Is finds the
// sentinels it wrapped there.
type remoteError struct {
	text  string
	kinds []string
}

func (e *remoteError) Error() string { return e.text }

func (e *remoteError) Is(target error) bool {
	for _, k := range e.kinds {
		if sentinels[k] == target {
			return true
		}
	}
	return false
}

// wireError is the lab process's encoding of a request's error for the cell (cellError
// decodes it).
func wireError(err error) *labproc.Error {
	w := &labproc.Error{Text: err.Error()}
	for k, s := range sentinels {
		if errors.Is(err, s) {
			w.Kinds = append(w.Kinds, k)
		}
	}
	var interrupted *InterruptedError
	var busy *RunBusyError
	switch {
	case errors.As(err, &interrupted):
		w.Detail, _ = encode(wireDetail{Interrupted: interrupted})
	case errors.As(err, &busy):
		w.Detail, _ = encode(wireDetail{Busy: busy})
	}
	return w
}

// wireDetail holds the typed errors that reach the cell whole.
type wireDetail struct {
	Interrupted *InterruptedError
	Busy        *RunBusyError
}

// cellError is the error of the lab process as the cell gets it: a typed error for an
// interrupted or busy run, else its text with its sentinels.
func cellError(err error) error {
	var w *labproc.Error
	if !errors.As(err, &w) {
		return err
	}
	var d wireDetail
	if w.Detail != nil && decode(w.Detail, &d) == nil {
		switch {
		case d.Interrupted != nil:
			return d.Interrupted
		case d.Busy != nil:
			return d.Busy
		}
	}
	return &remoteError{text: w.Text, kinds: w.Kinds}
}

func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(v)
	return b.Bytes(), err
}

func decode(b []byte, v any) error { return gob.NewDecoder(bytes.NewReader(b)).Decode(v) }
