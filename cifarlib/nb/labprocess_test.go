package nb

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"errors"
	"fmt"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/internal/labproc"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"
	"github.com/stretchr/testify/require"
)

// TestLabProcessErrors: an error of the lab process reaches the cell with its text, errors.Is
// finds the sentinels it wrapped, and an interrupted or busy run is its typed error again
// (Check ends the cell quietly for the first, as in the cell's own program).
func TestLabProcessErrors(t *testing.T) {
	head := fmt.Errorf("training: %w", &cifarlib.HeadMismatchError{HeadWidth: 10, NumClasses: 100, Dataset: "cifar100"})
	got := cellError(wireError(head))
	require.EqualError(t, got, head.Error())
	require.ErrorIs(t, got, cifarlib.ErrHeadMismatch)
	require.NotErrorIs(t, got, ErrNoRun)

	interrupted := &InterruptedError{Run: "r", Dir: "/d/runs/r", Step: 12, Target: 400}
	got = cellError(wireError(fmt.Errorf("wrapped: %w", interrupted)))
	require.Equal(t, interrupted, got)
	require.ErrorIs(t, got, ErrInterrupted)

	busy := &RunBusyError{Run: "r", PID: 42}
	require.Equal(t, busy, cellError(wireError(busy)))

	plain := errors.New("nb: something")
	require.Equal(t, plain, cellError(plain), "an error of this program is left as it is")
}

// TestFitRequestTravels: a Fit's settings travel to the lab process as they are, whole (its
// Env stays in the cell: the lab process has its own backend and splits).
func TestFitRequestTravels(t *testing.T) {
	cfg := training.Defaults()
	cfg.Run.Steps, cfg.Data.BatchSize, cfg.Run.Seed, cfg.Model.Head, cfg.Compute.Precision = 7, 32, 3, 100, cifarlib.PrecisionBF16Mixed
	cfg.Eval.Every, cfg.Optimizer, cfg.Compute.Devices, cfg.Transfer.From = training.EvalOff, optimizers.AdamW{LearningRate: 0.01, WeightDecay: 0.004}, 2, "/runs/src"
	cfg.Record.Params = map[string]string{"steps": "7"}
	clock := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	b, err := encode(fitRequest{Name: "n", Settings: cfg, Clock: clock, Spec: data.CIFAR100(data.LabelsFine), DataDir: "/d", RunsDir: "/r", InNotebook: true})
	require.NoError(t, err)
	var got fitRequest
	require.NoError(t, decode(b, &got))
	require.Equal(t, cfg, got.Settings)
	require.True(t, clock.Equal(got.Clock))
	require.Equal(t, data.CIFAR100(data.LabelsFine), got.Spec)
	require.True(t, got.InNotebook)
}

// TestLabClientOnlyForWhatTravels: Fit runs in this program outside a notebook, for a lab of
// New (its own backend), with the lab process off, and for a config with the cell's hooks.
func TestLabClientOnlyForWhatTravels(t *testing.T) {
	l := &Lab{opened: true}
	require.Nil(t, l.labClient(training.Env{}), "not a GoNB cell")
	t.Setenv("GONB_TMP_DIR", t.TempDir())
	saved := cellIO
	defer func() { cellIO = saved }()
	cellIO.notebook = func() bool { return true }
	require.NotNil(t, l.labClient(training.Env{}))
	require.Nil(t, l.labClient(training.Env{OnPoint: func(runs.HistoryPoint) error { return nil }}))
	require.Nil(t, l.labClient(training.Env{Plot: true}))
	require.Nil(t, l.labClient(training.Env{OnEvent: func(training.Event) {}}))
	require.Nil(t, l.labClient(training.Env{Progress: training.ProgressOn}))
	require.Nil(t, l.labClient(training.Env{Train: &data.Records{}}))
	require.Nil(t, (&Lab{}).labClient(training.Env{}), "a lab of New")
	t.Setenv(LabProcessEnv, "0")
	require.Nil(t, l.labClient(training.Env{}))
}

// labEvents collects what the lab process says it is doing, as the cell's status line gets it.
type labEvents struct{ events []training.Event }

// collect keeps the event of m, if it is one.
func (l *labEvents) collect(m *labproc.Message) {
	var e training.Event
	if m.Kind == labproc.KindEvent && decode(m.Payload, &e) == nil {
		l.events = append(l.events, e)
	}
}

// kinds returns the kinds of the events collected, with a compile's program (what the
// timeline recorded, EventTimed, with its phase and program), and forgets them.
func (l *labEvents) kinds() (out []string) {
	for _, e := range l.events {
		if e.Kind == training.EventTimed {
			out = append(out, string(e.Kind)+" "+string(e.Timed.Phase)+" "+e.Timed.Program)
			continue
		}
		out = append(out, string(e.Kind)+" "+e.Program)
	}
	l.events = nil
	return out
}

// last returns the last event collected of kind.
func (l *labEvents) last(kind training.EventKind) training.Event {
	for i := len(l.events) - 1; i >= 0; i-- {
		if l.events[i].Kind == kind {
			return l.events[i]
		}
	}
	return training.Event{}
}

// checkLabServerEvaluates checks the lab process's evaluation of the run "two" in dataDir's
// runs: its progress reaches the cell, and it gives what this process's evaluation of the same
// weights gives, the same program on the same backend, with and without test-time augmentation.
func checkLabServerEvaluates(t *testing.T, s *labServer, client *labproc.Client, dataDir string) {
	dir := filepath.Join(dataDir, "runs", "two")
	payload, err := encode(evalRequest{Dir: dir, Step: 2, Spec: data.CIFAR10(), DataDir: dataDir, Split: data.SplitTest.String(), Options: training.EvalOptions{MaxExamples: 50}})
	require.NoError(t, err)
	var events labEvents
	msg, err := client.Do(context.Background(), &labproc.Request{Op: "evaluate", Payload: payload}, events.collect)
	require.NoError(t, err)
	var there training.EvalResult
	require.NoError(t, json.Unmarshal(msg.Payload, &there))
	require.Equal(t, 50, events.last(training.EventEval).Done)
	require.Equal(t, []string{"eval ", "compile evaluation", "timed compile evaluation", "eval ", "timed eval "}, events.kinds(), "the evaluation's progress reaches the cell")
	lab, err := s.lab(data.CIFAR10(), dataDir, func(training.Event) {}) // under the server's lock: its handler may still hold it
	require.NoError(t, err)
	ck, err := training.LoadCheckpoint(dir, lab.Backend)
	require.NoError(t, err)
	here, err := training.Evaluate(context.Background(), lab.Backend, ck.Model, ck.Store, lab.Test, training.EvalOptions{MaxExamples: 50})
	require.NoError(t, err)
	require.Equal(t, here.Accuracy, there.Accuracy)
	require.Equal(t, here.Loss, there.Loss)
	require.Len(t, s.held, 1)

	// Test-time augmentation travels with the options.
	opts := training.EvalOptions{MaxExamples: 50, TTA: training.TTAMirrorTranslate}
	payload, err = encode(evalRequest{Dir: dir, Step: 2, Spec: data.CIFAR10(), DataDir: dataDir, Split: data.SplitTest.String(), Options: opts})
	require.NoError(t, err)
	msg, err = client.Do(context.Background(), &labproc.Request{Op: "evaluate", Payload: payload}, func(*labproc.Message) {})
	require.NoError(t, err)
	var thereTTA training.EvalResult
	require.NoError(t, json.Unmarshal(msg.Payload, &thereTTA))
	hereTTA, err := training.Evaluate(context.Background(), lab.Backend, ck.Model, ck.Store, lab.Test, opts)
	require.NoError(t, err)
	require.Equal(t, training.TTAMirrorTranslate, thereTTA.TTA)
	require.Equal(t, hereTTA.Loss, thereTTA.Loss)
	require.NotEqual(t, here.Loss, thereTTA.Loss)
}

// TestLabServerFit serves lab.Fit requests with the lab process's handler on a socket in this
// test's process (the kernel tests re-run a cell's binary as the real one): the run trains
// there, its output and its events reach the client, its result comes back, and a head mismatch
// keeps errors.Is.
func TestLabServerFit(t *testing.T) {
	dataDir := t.TempDir()
	s, client := startLabServer(t)
	backend, err := backends.Lazy(backends.Auto) // the cell's, for its lab's settings (Arch)
	require.NoError(t, err)
	cell := &Lab{Spec: data.CIFAR10(), DataDir: dataDir, Arch: Arch(backend)}
	var events labEvents
	fit := func(name string, values map[string]string, clock time.Time) (*fitReply, string, error) {
		payload, err := encode(fitRequest{Name: name, Settings: settingsOf(t, cell, values), Clock: clock, Spec: data.CIFAR10(), DataDir: dataDir,
			RunsDir: filepath.Join(dataDir, "runs")})
		require.NoError(t, err)
		var out strings.Builder
		msg, err := client.Do(context.Background(), &labproc.Request{Op: "fit", Payload: payload}, func(m *labproc.Message) {
			out.WriteString(m.Text)
			events.collect(m)
		})
		require.NotNil(t, msg, "%v", err)
		var reply fitReply
		require.NoError(t, decode(msg.Payload, &reply))
		return &reply, out.String(), cellError(err)
	}
	reply, out, err := fit("two", map[string]string{"steps": "2", "batch": "16", "eval-every": "-1", "no-eval": "true", "log-every": "1"}, time.Time{})
	require.NoError(t, err)
	require.Contains(t, out, `run "two": trained 2 steps in`)
	var res training.Result
	require.NoError(t, json.Unmarshal(reply.Result, &res))
	require.Equal(t, 2, res.EndStep)
	require.NotNil(t, reply.History)
	require.Equal(t, training.ReasonFirst, events.last(training.EventCompile).Reason)
	require.Equal(t, []string{"phase ", "backend ", "data ", "timed backend ", "timed data ", "compile train step", "timed compile train step",
		"compile variable initialisation", "timed compile variable initialisation", "step_start ", "timed first_step ", "step ", "step ",
		"timed steps ", "checkpoint ", "timed checkpoint "},
		events.kinds(), "the events of the first fit, as they reach the cell, with what the timeline recorded")

	checkLabServerEvaluates(t, s, client, dataDir)

	// The same Fit again: the lab process's programs compile nothing, and the run's timeline
	// counts from the cell's program start.
	started := time.Now().Add(-time.Second)
	reply, _, err = fit("two", map[string]string{"steps": "2", "batch": "16", "eval-every": "-1", "no-eval": "true"}, started)
	require.NoError(t, err)
	var again training.Result
	require.NoError(t, json.Unmarshal(reply.Result, &again))
	require.Equal(t, 0, again.Timeline.Programs(""), "%s", again.Timeline)
	require.Equal(t, []string{"phase ", "timed backend ", "timed data ", "step_start ", "timed first_step ", "step ", "step ", "timed steps ",
		"checkpoint ", "timed checkpoint "}, events.kinds(), "nothing compiles, nothing loads")
	require.True(t, started.Equal(again.Timeline.Origin), "%v", again.Timeline.Origin)
	require.Equal(t, res.Loss, again.Loss, "the same run")

	_, _, err = fit("head", map[string]string{"steps": "1", "batch": "16", "head": "5"}, time.Time{})
	require.ErrorIs(t, err, cifarlib.ErrHeadMismatch)
	require.ErrorContains(t, err, "model head has 5 outputs but dataset cifar10 has 10 classes")

	checkLabServerRests(t, s, func() *fitReply {
		reply, _, err := fit("two", map[string]string{"steps": "2", "batch": "16", "eval-every": "-1", "no-eval": "true"}, time.Time{})
		require.NoError(t, err)
		return reply
	}, res.Loss)
}

// startLabServer serves a lab process's handler on a socket in this test's process, and
// returns it and a client of it.
func startLabServer(t *testing.T) (*labServer, *labproc.Client) {
	t.Helper()
	folder, err := labproc.Folder(t.TempDir())
	require.NoError(t, err)
	s := &labServer{labs: map[string]*Lab{}, held: map[string]*heldRun{}}
	srv := &labproc.Server{Socket: labproc.SocketPath(folder), Fingerprint: "fp", Backend: labproc.BackendKey(), Handle: s.handle, WireError: wireError}
	go srv.Serve()
	require.Eventually(t, func() bool { _, err := os.Stat(labproc.SocketPath(folder)); return err == nil }, 5*time.Second, 10*time.Millisecond)
	return s, &labproc.Client{Folder: folder, Fingerprint: "fp"}
}

// checkLabServerRests: at rest, Release keeps everything and Drop lets go of the data and the
// held runs of s, keeping the compiled programs; fitAgain's Fit then loads the data again,
// compiles nothing and trains as before (loss).
func checkLabServerRests(t *testing.T, s *labServer, fitAgain func() *fitReply, loss float64) {
	t.Helper()
	// At rest: Release keeps everything, Drop lets go of the data and the held runs and keeps
	// the compiled programs; the next Fit loads the data again and compiles nothing.
	s.rest(labproc.Release)
	require.Len(t, s.labs, 1)
	require.Len(t, s.held, 1)
	s.rest(labproc.Drop)
	require.Empty(t, s.labs)
	require.Empty(t, s.held)
	require.Equal(t, 1, s.programs.Len())
	reply := fitAgain()
	var rested training.Result
	require.NoError(t, json.Unmarshal(reply.Result, &rested))
	require.Equal(t, 0, rested.Timeline.Programs(""), "%s", rested.Timeline)
	require.Equal(t, loss, rested.Loss, "the same run")
	require.Len(t, s.labs, 1)
}

// TestLabsBounded: the lab process keeps the data of the last maxLabs data folders.
func TestLabsBounded(t *testing.T) {
	backend, err := backends.New(backends.Go)
	require.NoError(t, err)
	s := &labServer{labs: map[string]*Lab{}, backend: backend}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	for _, dir := range dirs {
		_, err := s.lab(data.CIFAR10(), dir, func(training.Event) {})
		require.NoError(t, err)
	}
	require.Len(t, s.labs, maxLabs)
	require.NotContains(t, s.labs, dirs[0]+"\x00cifar10")
	require.Contains(t, s.labs, dirs[2]+"\x00cifar10")
}

// TestHeldRunsBounded: the lab process keeps the runs evaluated last, at most maxHeld.
func TestHeldRunsBounded(t *testing.T) {
	s := &labServer{held: map[string]*heldRun{}}
	for _, dir := range []string{"a", "b", "c", "d", "e"} {
		s.hold(dir, &heldRun{key: dir})
	}
	require.Equal(t, []string{"b", "c", "d", "e"}, s.heldOrder)
	s.hold("b", s.held["b"]) // evaluated again: the most recent
	s.hold("f", &heldRun{key: "f"})
	require.Equal(t, []string{"d", "e", "b", "f"}, s.heldOrder)
	require.Len(t, s.held, maxHeld)
	require.NotContains(t, s.held, "c")
}
