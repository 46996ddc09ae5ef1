package nb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"

	"github.com/gomlx/compute"
)

// RunsEnv names the folder where Lab keeps its runs; default: "runs" in the data folder
// (data.DefaultDir()). `cifarlab runs` lists the same folder.
const RunsEnv = runs.DirEnv

// Lab is what the cells of a notebook share: the kernel's backend, the dataset's splits, the
// architecture the notebooks train on that backend, and the folder of named runs, so that a
// cell trains a model with Fit and a later cell, a new program in GoNB, gets it back with Load.
type Lab struct {
	// Spec is the dataset.
	Spec data.Spec
	// Backend is the one the kernel selected (backends.New("auto") follows GOMLX_BACKEND). The
	// lab of Open creates it when a cell first computes on it (backends.Lazy): a cell whose
	// Fit, Transfer or Evaluate runs in the kernel's lab process, or which only shows tables,
	// creates no backend (no PJRT client, no GPU memory) in its own program.
	Backend compute.Backend
	// Arch is the architecture the notebooks train on Backend (see Arch).
	Arch string
	// Train and Test are the splits: the real data when DataDir holds it, else synthetic data in
	// the same format, generated once (data.LoadPrepared).
	Train, Test *data.Records
	// Synthetic is true when the splits are the synthetic stand-in.
	Synthetic bool
	// Data is the data's state (data.StateOf: real and verified, real and unverified, or
	// synthetic), with its folders as the cells print them ($CIFARLAB_DATA/...).
	Data data.State
	// Layout is the layout the data was read in: CIFAR's binary files, or torchvision's python
	// pickles (data.DetectLayout).
	Layout data.Layout
	// DataDir is the data folder (data.DefaultDir()) and RunsDir the folder of runs.
	DataDir, RunsDir string

	// opened is true for a lab of Open (the kernel's backend): only its Fit runs in the
	// kernel's lab process, which has the same backend.
	opened bool
}

// Open returns the Lab of spec on the kernel's backend, with the data of the default data folder
// ($CIFARLAB_DATA), and stops the cell when that fails: declare it once, in a notebook's first
// cell (`var lab = nb.Open(spec)`), and every cell has it. The backend is checked now (a
// missing plugin or GPU stops the cell) but created by the first computation on lab.Backend
// (backends.Lazy), as GoNB runs every cell as a program of its own.
func Open(spec data.Spec) *Lab {
	backend, err := backends.Lazy(backends.Auto)
	Check(err)
	l := Must(New(spec, backend, data.DefaultDir()))
	l.opened = true
	return l
}

// New returns the Lab of spec on backend with the data of dataDir (loaded, or synthesised there
// on first use) and its runs in $CIFARLAB_RUNS, else dataDir/runs.
func New(spec data.Spec, backend compute.Backend, dataDir string) (*Lab, error) {
	if backend == nil {
		return nil, cifarlib.ErrNoBackend
	}
	st, err := data.PrepareState(dataDir, spec, data.SynthOptions{})
	if err != nil {
		return nil, err
	}
	train, err := st.LoadSplit(data.SplitTrain) // its Kind the state's: the charts' captions say it
	if err != nil {
		return nil, err
	}
	test, err := st.LoadSplit(data.SplitTest)
	if err != nil {
		return nil, err
	}
	train.Source, test.Source = shownPath(train.Source), shownPath(test.Source)
	st.Root, st.LoadRoot, st.Dir = shownPath(st.Root), shownPath(st.LoadRoot), shownPath(st.Dir)
	runs := runs.DefaultDir(dataDir)
	return &Lab{Spec: spec, Backend: backend, Arch: Arch(backend), Train: train, Test: test,
		Synthetic: st.Kind == data.KindSynthetic, Data: st, Layout: st.Layout, DataDir: dataDir, RunsDir: runs}, nil
}

// Arch returns the architecture the notebooks train on backend: the small CNN
// (cifarlib.ArchCNN) on XLA backends (the CPU plugin or CUDA), and the linear model
// (cifarlib.ArchLinear) on the pure-Go backend, whose convolutions are too slow for a notebook
// that must run in a couple of minutes on a laptop. The head, the labels and the guards behave
// the same on every architecture; a nil backend counts as the pure-Go one.
func Arch(backend compute.Backend) string {
	if backend == nil || backends.IsGoBackend(backend) {
		return cifarlib.ArchLinear
	}
	return cifarlib.ArchCNN
}

// String describes the lab: the backend, the data's state in one line (Data: real and
// verified, real and unverified, or synthetic, as `cifarlab doctor` says it), the images of
// each split and the range of the training labels. Synthetic data comes first, in a line
// starting "SYNTHETIC DATA:", so that a reader skimming the first cell cannot miss it.
func (l *Lab) String() string {
	var b strings.Builder
	if l.Synthetic {
		fmt.Fprintf(&b, "%s\n", l.Data)
	}
	fmt.Fprintf(&b, "backend: %s (GOMLX_BACKEND=%q)\n", backends.Name(l.Backend), os.Getenv("GOMLX_BACKEND"))
	if l.Synthetic {
		fmt.Fprintf(&b, "data:    %s (see the first line)\n", data.KindSynthetic)
	} else {
		fmt.Fprintf(&b, "data:    %s\n", l.Data)
	}
	s := l.Train.LabelStats(0)
	fmt.Fprintf(&b, "images:  %d training and %d test images of %s\nlabels:  %d..%d", l.Train.Len(), l.Test.Len(), l.Spec, s.Min, s.Max)
	return b.String()
}

// RunDir returns the folder of the run called name. Names are single path elements of
// letters, digits, '-', '_' and '.', so a run never lands outside RunsDir.
func (l *Lab) RunDir(name string) (string, error) {
	if l.RunsDir == "" {
		return "", fmt.Errorf("nb: run %q: the lab has no runs folder: create it with nb.Open or nb.New", name)
	}
	if name == "" || name == "." || name == ".." || strings.IndexFunc(name, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) >= 0 {
		return "", fmt.Errorf("nb: run name %q: use letters, digits, '-', '_' and '.' only, e.g. \"01-unguarded\"", name)
	}
	return filepath.Join(l.RunsDir, name), nil
}

// Settings returns the settings a run of the lab starts from: training.Defaults on the lab's
// dataset, data folder and architecture (see Arch). A cell overrides them field by field:
//
//	s := lab.Settings()
//	s.Run.Steps, s.Data.BatchSize = 200, 64
//	res := nb.Must(lab.Fit("fixed", s))
func (l *Lab) Settings() training.Settings {
	s := training.Defaults()
	s.Data.Spec, s.Data.Dir, s.Model.Arch = l.Spec, l.DataDir, l.Arch
	return s
}

// Fit trains s as the run called name, from scratch, on the lab's data (s.Data's dataset and
// folder are the lab's), its backend and its splits: a previous run of that name is removed
// first, so running the cell again gives the same result, unless that run was interrupted,
// which Fit resumes from its checkpoint (the same parameters as an uninterrupted run; with
// other settings than the interrupted run's it starts again). Start s from lab.Settings() (the
// lab's architecture) or a recipe (training.Airbench94()). The progress bar is off, and log
// lines (every s.Record.LogEvery steps, when set) go to Output. In a notebook, the loss and
// accuracy charts of the run so far are drawn in the cell and redrawn in place as it trains
// (Live, at most every LiveEvery; not with env.Plot, GoMLX's own plotly figures), and stay as
// the run's final charts. The run's checkpoint stays in RunDir(name) for Load. It prints how
// long training took, and where the time went (the run's timeline, runs.Timeline.Short: e.g.
// "start 0.6 s · compile 3.9 s · 300 steps 2.5 s · eval 0.4 s · 1 checkpoint 0.02 s"). In a
// notebook, a line at the top of the cell's output says what the run is doing from the first
// second, replaced in place: starting the lab process, compiling the train step (and why: the
// first time for this shape, or what differs from the programs the lab process keeps), each
// step, each evaluation's progress (training.Status); it ends on what it did.
//
// An interrupt (Kernel → Interrupt, which GoNB sends to the cell as SIGINT; Ctrl-C) stops
// training after the current step, saves the checkpoint, marks run.json "interrupted" and
// returns the result with an *InterruptedError, which says how to continue; Must and Check stop
// the cell with it. A second interrupt kills the cell at once. GoNB kills a cell's program 5 s
// after the interrupt: when the step in the lab process is longer than that, the cell does not
// wait to be killed but ends within 3 s (labproc.DefaultGrace) with a nil result and an
// *InterruptedError whose Saving is set: `interrupted: the lab process saves run "X" after the
// current step (step K of N); re-run this cell to continue from there`. The lab process finishes
// the step and saves it; meanwhile a later cell's Fit of the run waits for that, saying so, and
// Load (and every call that reads the run) waits for the save too.
//
// In a notebook, Fit runs in the kernel's lab process (see LabProcess), which keeps the backend,
// the data and the compiled programs from one cell to the next; the cell's output, the run
// folder and the result are the same as in the cell's own program.
func (l *Lab) Fit(name string, s training.Settings) (*training.Result, error) {
	return l.FitEnv(name, s, training.Env{})
}

// FitEnv is Fit with the cell's own hooks, log, progress bar or plots (env), which keep the run
// in the cell's program: its backend and splits are the lab's unless env gives others.
func (l *Lab) FitEnv(name string, s training.Settings, env training.Env) (res *training.Result, err error) {
	st := cellStatus(name)
	defer func() { closeStatus(st, err) }()
	defer func() {
		if res != nil && !inLabProcess {
			noteCompile(res.Timeline) // for CellTime
		}
	}()
	if res, err, done := l.fitInLabProcess(name, s, env, st); done {
		return res, err
	}
	ctx, stop := training.InterruptContext(context.Background())
	defer stop()
	env.OnEvent = withStatus(st, env.OnEvent)
	return l.fit(ctx, name, s, env)
}

// ErrNoRun is returned by Load when the run has not been trained yet.
var ErrNoRun = errors.New("nb: no such run")

// Load returns the model and weights of the run called name, as an earlier cell's Fit saved
// them, on the lab's backend: a later cell's way to use what an earlier one trained without
// training again. It prints the step and how long loading took. In a notebook, its Evaluate
// of the lab's Train or Test split runs in the kernel's lab process (see LabProcessEnv), which
// keeps the run's weights, the data and the compiled evaluation from cell to cell. Evaluate
// keeps its results in the run folder (training.EvaluationsFile): evaluating the same weights
// on the same images with the same options again returns the kept result at once, and says so.
// A run the lab process is still saving after its cell was interrupted (a step longer than GoNB
// waits before it kills the cell) is waited for, with a line that says so.
func (l *Lab) Load(name string) (*training.LoadedCheckpoint, error) {
	dir, err := l.existingRun(name)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ckpt, err := training.LoadCheckpoint(dir, l.Backend)
	if err != nil {
		return nil, err
	}
	l.evaluateRun(name, ckpt, dir)
	fmt.Fprintf(output(), "run %q: loaded %s at step %d in %.1fs, from %s\n", name, ckpt.Model, ckpt.Info.Step, time.Since(start).Seconds(), shownPath(dir))
	return ckpt, nil
}

// TryBackend describes what backends.New(name) gives here: the backend's name, or the
// error it returns. A name that resolves to the lab's own GPU backend is not created twice.
func (l *Lab) TryBackend(name string) string {
	if name == backends.CUDA && strings.HasPrefix(backends.Name(l.Backend), "xla:cuda") {
		return "the same GPU as the lab's backend"
	}
	b, err := backends.New(name)
	if err != nil {
		return "error: " + err.Error()
	}
	return backends.Name(b)
}

// SyntheticEpochs is how long Lab.Epochs trains on the synthetic stand-in: enough to show a
// recipe running end to end (curves, checkpoint, evaluations) in two or three minutes on a
// two-core CPU, which is what CI runs; its accuracy means nothing (the first cell, and every
// figure's caption, say the data is synthetic). Two passes, not one: airbench94's lookahead
// first averages the weights at step 5, and a run of fewer steps (one pass of the 5000
// synthetic images at batch 1024 is 4) ends on its initial weights, at chance, as airbench's
// own code does.
const SyntheticEpochs = 2.0

// Epochs is the length of a notebook's training run for the lab's data, in epochs: epochs on
// real data (verified or not), and SyntheticEpochs on the synthetic stand-in, so that a notebook
// that trains a recipe for minutes on real data runs briefly where there is none (CI), without a
// switch in its cells. A recipe keeps its own length on real data with
// s.Run.Epochs = lab.Epochs(s.Run.Epochs) (airbench94's 9.9).
func (l *Lab) Epochs(epochs float64) float64 {
	if l.Synthetic {
		return SyntheticEpochs
	}
	return epochs
}
