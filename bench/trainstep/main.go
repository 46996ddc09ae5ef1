// Command trainstep times cifarlib's models on GoMLX backends: one SGD training step and one
// inference forward pass, per architecture, batch size and backend, with the first steps
// (compilation) excluded and the median of the timed steps reported.
//
// It is the Go half of bench/run.sh, which runs bench/torch_cpu.py on the same models and
// prints the ratios. Run it from the repository root:
//
//	go run ./bench/trainstep                                   # every backend found, default set
//	go run ./bench/trainstep -backends xla-cpu -models resnet18 -batches 128 -steps 5
//	go run ./bench/trainstep -json out.jsonl -cpuprofile bench/out/prof -backends go -models cnn -batches 32
//
// Backends: "go" (pure Go), "xla-cpu" (XLA's CPU PJRT plugin, found by
// internal/plugins.FindXLACPU; skipped with a note when it is not installed), "cuda", or any name
// backends.New accepts. The pure-Go backend's ResNet-18 steps take minutes each (about 7
// minutes at batch 128 on 2 cores), so -skip leaves them out by default; pass -skip "" to run them.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// DefaultSkip lists the backend/model/batch combinations left out unless -skip says otherwise:
// the pure-Go backend's ResNet-18 (minutes per step).
const DefaultSkip = "go/resnet18/*"

// Result is one measurement, written as a JSON line with -json.
type Result struct {
	Framework string  `json:"framework"` // "gomlx"
	Backend   string  `json:"backend"`   // key given in -backends, e.g. "go", "xla-cpu"
	Desc      string  `json:"desc"`      // cifarlib.BackendName
	Model     string  `json:"model"`
	Batch     int     `json:"batch"`
	Mode      string  `json:"mode"`      // "train" or "infer"
	Precision string  `json:"precision"` // cifarlib.Precision: "f32" or "bf16-mixed"
	Steps     int     `json:"steps"`
	MedianMS  float64 `json:"median_ms"`
	MinMS     float64 `json:"min_ms"`
	MaxMS     float64 `json:"max_ms"`
	FirstMS   float64 `json:"first_ms"` // first call: compilation plus one step
	ImagesPS  float64 `json:"images_per_s"`
	Threads   int     `json:"threads"`
	Skipped   string  `json:"skipped,omitempty"`
	Error     string  `json:"error,omitempty"`
	Loss      float64 `json:"loss,omitempty"` // loss after the last timed step (a sanity check)
	TimedAt   string  `json:"timed_at"`
}

type options struct {
	backends, models, modes []string
	precisions              []cifarlib.Precision
	batches                 []int
	steps, warmup           int
	budget                  time.Duration
	skip                    []string
	jsonOut, cpuProfile     string
}

func main() {
	var o options
	var backends, models, modes, batches, skip, precisions string
	flag.StringVar(&backends, "backends", "go,xla-cpu", "comma-separated backends: go, xla-cpu, cuda, or any backends.New name")
	flag.StringVar(&models, "models", "cnn,resnet20,resnet18", "comma-separated architectures")
	flag.StringVar(&batches, "batches", "32,128", "comma-separated batch sizes")
	flag.StringVar(&modes, "modes", "train,infer", "what to time: train (forward, backward, SGD update) and/or infer (forward only, inference mode)")
	flag.StringVar(&precisions, "precisions", "f32", "comma-separated precisions: f32 and/or bf16-mixed (cifarlib.Precision)")
	flag.IntVar(&o.steps, "steps", 10, "timed steps per measurement (the median is reported)")
	flag.IntVar(&o.warmup, "warmup", 2, "untimed steps first (the first one compiles the graph)")
	flag.DurationVar(&o.budget, "budget", 2*time.Minute, "stop timing a measurement after this long once 3 steps are timed")
	flag.StringVar(&skip, "skip", DefaultSkip, "comma-separated backend/model/batch patterns to leave out (path.Match syntax); \"\" runs everything")
	flag.StringVar(&o.jsonOut, "json", "", "append one JSON line per measurement to this file")
	list := flag.Bool("list", false, "print each backend of -backends (name, plugin) and exit")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of each measurement's timed steps to PREFIX-BACKEND-MODEL-BATCH-MODE.prof")
	flag.Parse()
	o.backends, o.models, o.modes, o.skip = splitList(backends), splitList(models), splitList(modes), splitList(skip)
	for _, b := range splitList(batches) {
		n, err := strconv.Atoi(b)
		if err != nil || n <= 0 {
			fail(fmt.Errorf("-batches: %q is not a positive integer", b))
		}
		o.batches = append(o.batches, n)
	}
	for _, p := range splitList(precisions) {
		precision, err := cifarlib.ParsePrecision(p)
		if err != nil {
			fail(fmt.Errorf("-precisions: %w", err))
		}
		o.precisions = append(o.precisions, precision)
	}
	for _, m := range o.modes {
		if m != "train" && m != "infer" {
			fail(fmt.Errorf("-modes: %q is neither train nor infer", m))
		}
	}
	if o.steps < 1 || o.warmup < 1 {
		fail(errors.New("-steps and -warmup must be at least 1 (the first step compiles)"))
	}
	if *list {
		listBackends(o.backends, os.Stdout)
		return
	}
	if err := run(o, os.Stdout); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "trainstep:", err)
	os.Exit(1)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func run(o options, w io.Writer) error {
	t := table{w: w, threads: runtime.GOMAXPROCS(0)}
	if o.jsonOut != "" {
		f, err := os.OpenFile(o.jsonOut, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		t.json = json.NewEncoder(f)
	}
	var prof *profiler
	if o.cpuProfile != "" {
		prof = &profiler{prefix: o.cpuProfile}
	}
	fmt.Fprintf(w, "trainstep: GOMAXPROCS=%d, %d CPUs, steps=%d warmup=%d budget=%s skip=%q\n",
		t.threads, runtime.NumCPU(), o.steps, o.warmup, o.budget, strings.Join(o.skip, ","))
	fmt.Fprintf(w, "%-8s %-9s %5s %-5s %6s %10s %10s %10s %11s  %s\n",
		"backend", "model", "batch", "mode", "steps", "median ms", "min ms", "first ms", "images/s", "note")
	for _, key := range o.backends {
		backend, err := openBackend(key)
		if err != nil {
			if err := t.emitEach(o, Result{Backend: resultKey(key), Skipped: "backend unavailable: " + err.Error()}); err != nil {
				return err
			}
			continue
		}
		if err := runBackend(backend, key, o, prof, t); err != nil {
			return err
		}
		backend.Finalize()
	}
	return nil
}

// runBackend measures every model, batch, mode and precision of o on backend (key), or says
// why one is skipped.
func runBackend(backend compute.Backend, key string, o options, prof *profiler, t table) error {
	desc := backends.Name(backend)
	if p := backends.Plugin(backend); p != "" {
		fmt.Fprintf(t.w, "# %s: %s, plugin %s\n", key, desc, p)
	} else {
		fmt.Fprintf(t.w, "# %s: %s\n", key, desc)
	}
	for _, m := range o.models {
		for _, b := range o.batches {
			skipReason := skipped(o.skip, key, m, b)
			for _, mode := range o.modes {
				for _, p := range o.precisions {
					r := Result{Backend: resultKey(key), Desc: desc, Model: m, Batch: b, Mode: mode, Precision: string(p)}
					if skipReason != "" {
						r.Skipped = skipReason
					} else if err := measure(backend, m, b, mode, o, prof, &r); err != nil {
						r.Error = err.Error()
					}
					if err := t.emit(r); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// table prints results, one line each, and appends them to the JSON file when there is one.
type table struct {
	w       io.Writer
	json    *json.Encoder
	threads int
}

// emit prints r (and writes it as JSON), stamped with the framework, threads and time.
func (t table) emit(r Result) error {
	r.Framework, r.Threads, r.TimedAt = "gomlx", t.threads, time.Now().UTC().Format(time.RFC3339)
	note := r.Skipped
	if r.Precision != string(cifarlib.PrecisionF32) {
		note = strings.TrimSpace(r.Precision + " " + note)
	}
	if r.Error != "" {
		note = "ERROR: " + r.Error
	}
	fmt.Fprintf(t.w, "%-8s %-9s %5d %-5s %6d %10.1f %10.1f %10.1f %11.1f  %s\n",
		r.Backend, r.Model, r.Batch, r.Mode, r.Steps, r.MedianMS, r.MinMS, r.FirstMS, r.ImagesPS, note)
	if t.json != nil {
		return t.json.Encode(r)
	}
	return nil
}

// emitEach emits r for every model, batch, mode and precision of o.
func (t table) emitEach(o options, r Result) error {
	for _, m := range o.models {
		for _, b := range o.batches {
			for _, mode := range o.modes {
				for _, p := range o.precisions {
					r.Model, r.Batch, r.Mode, r.Precision = m, b, mode, string(p)
					if err := t.emit(r); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// listBackends prints "KEY<TAB>DESCRIPTION<TAB>PLUGIN" per backend, or "KEY<TAB>unavailable: ERROR".
func listBackends(keys []string, w io.Writer) {
	for _, key := range keys {
		b, err := openBackend(key)
		if err != nil {
			fmt.Fprintf(w, "%s\tunavailable: %v\n", key, err)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", key, backends.Name(b), backends.Plugin(b))
		b.Finalize()
	}
}

// resultKey is the backend name written to the results: the -backends key, with "+simd" added
// to the pure-Go backend's when this program was built with GOEXPERIMENT=simd.
func resultKey(key string) string {
	if simdBuild && (key == backends.Go || strings.HasPrefix(key, backends.Go+":")) {
		return key + "+simd"
	}
	return key
}

// openBackend maps a -backends key to a cifarlib backend.
func openBackend(key string) (compute.Backend, error) {
	switch key {
	case "xla-cpu":
		loc, err := plugins.FindXLACPU("")
		if err != nil {
			return nil, err
		}
		if loc.Path == "" {
			return nil, errors.New("the XLA CPU plugin is not installed (" + plugins.XLACPUInstallHint + ")")
		}
		return backends.New("xla:cpu")
	default:
		return backends.New(key)
	}
}

func skipped(patterns []string, backend, arch string, batch int) string {
	id := fmt.Sprintf("%s/%s/%d", backend, arch, batch)
	for _, p := range patterns {
		if ok, _ := path.Match(p, id); ok {
			return "skipped by -skip " + p
		}
	}
	return ""
}

// profiler writes one CPU profile per measurement, covering its timed steps only:
// PREFIX-BACKEND-MODEL-BATCH-MODE.prof.
type profiler struct {
	prefix string
	f      *os.File
}

func (p *profiler) start(r *Result) error {
	if p == nil {
		return nil
	}
	f, err := os.Create(fmt.Sprintf("%s-%s-%s-%d-%s-%s.prof", p.prefix, r.Backend, r.Model, r.Batch, r.Mode, r.Precision))
	if err != nil {
		return err
	}
	p.f = f
	return pprof.StartCPUProfile(f)
}

func (p *profiler) stop() {
	if p != nil && p.f != nil {
		pprof.StopCPUProfile()
		p.f.Close()
		p.f = nil
	}
}

// batchData makes a deterministic batch: images in [-1, 1) shaped [batch, 32, 32, 3] and labels
// in [0, 10) shaped [batch, 1].
func batchData(batch int) (*tensors.Tensor, *tensors.Tensor) {
	images := make([]float32, batch*data.ImageBytes)
	for i := range images {
		images[i] = float32(math.Sin(float64(i)*0.0137)) * 0.99
	}
	labels := make([]int32, batch)
	for i := range labels {
		labels[i] = int32((i * 7) % 10)
	}
	return tensors.FromFlatDataAndDimensions(images, batch, data.ImageHeight, data.ImageWidth, data.ImageChannels),
		tensors.FromFlatDataAndDimensions(labels, batch, 1)
}

// measure times one (model, batch, mode) on backend into r.
func measure(backend compute.Backend, arch string, batch int, mode string, o options, prof *profiler, r *Result) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	m, err := cifarlib.NewModel(data.CIFAR10(), arch).Backend(backend).Precision(cifarlib.Precision(r.Precision)).Done()
	if err != nil {
		return err
	}
	images, labels := batchData(batch)
	store := model.NewStore()
	if err := store.SetRNGStateFromSeed(1); err != nil {
		return err
	}
	step, done, err := newStep(backend, store, m, mode, images, labels)
	if err != nil {
		return err
	}
	defer done()
	if err := timeSteps(step, o, prof, r); err != nil {
		return err
	}
	if mode == "infer" {
		r.Loss = 0
	}
	r.ImagesPS = float64(batch) / (r.MedianMS / 1000)
	return nil
}

// newStep is one step of mode on the batch (a nil step for an unknown mode), returning a value
// read back to the host so that it waits for the step: "train" is plain SGD on the guarded loss
// (cifarlib's default) without extra metrics, forward, backward and update, returning the loss;
// "infer" is the forward pass, returning the first logit. done releases what the step holds.
func newStep(backend compute.Backend, store *model.Store, m *cifarlib.Model, mode string, images, labels *tensors.Tensor) (step func() (float64, error), done func(), err error) {
	switch mode {
	case "train":
		trainer := train.NewTrainer(backend, store, m.ModelFn, m.LossFn(cifarlib.GuardAll),
			optimizer.StochasticGradientDescent().WithLearningRate(0.01).WithDecay(false).Done(), nil, nil)
		b := train.Batch{Inputs: []*tensors.Tensor{images}, Labels: []*tensors.Tensor{labels}}
		return func() (float64, error) {
			metrics, err := trainer.TrainStep(b)
			if err != nil {
				return 0, err
			}
			return float64(tensors.ToScalar[float32](metrics[0])), nil // reads the loss: waits for the step
		}, func() {}, nil
	case "infer":
		exec, err := model.NewExec(backend, store, func(scope *model.Scope, x *graph.Node) *graph.Node {
			scope.Store().SetTraining(x.Graph(), false)
			return m.ModelFn(scope, nil, []*graph.Node{x})[0]
		})
		if err != nil {
			return nil, nil, err
		}
		return func() (float64, error) {
			out, err := exec.Call(images)
			if err != nil {
				return 0, err
			}
			logits := tensors.MustCopyFlatData[float32](out[0]) // copies to the host: waits for the step
			out[0].FinalizeAll()
			return float64(logits[0]), nil
		}, exec.Finalize, nil
	}
	return nil, func() {}, nil
}

// timeSteps runs o.warmup steps (the first one's time is r.FirstMS), then times steps, profiled
// when prof is set, until o.steps or, after 3, o.budget: r gets their count, median, min and max
// and the last step's value as Loss.
func timeSteps(step func() (float64, error), o options, prof *profiler, r *Result) error {
	for i := range o.warmup {
		start := time.Now()
		if _, err := step(); err != nil {
			return err
		}
		if i == 0 {
			r.FirstMS = ms(time.Since(start))
		}
	}
	if err := prof.start(r); err != nil {
		return err
	}
	defer prof.stop()
	var times []float64
	begin := time.Now()
	for len(times) < o.steps && (len(times) < 3 || time.Since(begin) < o.budget) {
		start := time.Now()
		v, err := step()
		if err != nil {
			return err
		}
		times = append(times, ms(time.Since(start)))
		r.Loss = v
	}
	sort.Float64s(times)
	r.Steps = len(times)
	r.MedianMS = median(times)
	r.MinMS, r.MaxMS = times[0], times[len(times)-1]
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// median of sorted values.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
