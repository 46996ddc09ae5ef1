package training

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/checkpoint"
	"github.com/gomlx/gomlx/ml/train"
)

// Programs keeps the compiled programs of training runs for the life of a process, so that a
// second Train with the same ProgramKey compiles nothing: a process that outlives notebook cells
// keeps one and passes it in Env.Programs. The zero value is ready to use; nil keeps nothing.
// It is safe for concurrent use; a set of programs serves one run at a time (a run that finds
// its set in use compiles its own, which is not kept).
//
// What is keyed and what is fed: ProgramKey holds what shapes the programs, the settings whose
// row of the table (Fields) has Role Shapes. Every other numeric hyper-parameter (Role Fed) is
// fed at run time: the train step reads it from a non-trainable variable of the Store
// (package optimizers: fed values), which each run sets from its own settings. So a run that changes only those
// reuses the programs. `cifarlab train -h` lists the settings by role, from the rows.
//
// What it keeps: GoMLX compiles a program per model.Exec and input shapes, and each Exec is
// bound to the model.Store whose variables it reads and updates (model.NewExec; train.Trainer
// keeps one Exec per dataset spec, each with its compiled programs). So a set keeps the model,
// the Store, the train.Trainer (its train-step Exec), the evalProgram (its evaluation Exec) and
// GoMLX's variable initialisation (its Exec), and the values of every variable when training
// started (after GoMLX initialised them from the seed). A run that reuses the set restores those
// values, sets its fed values and, for another seed, re-runs the initialisation from its seed,
// so it trains from the same initial weights, optimiser state and random state as a fresh run:
// its results are the same bit for bit.
//
// Runs that are not kept, and compile as before: those transferred from another run
// (Transfer.From, whose weights come from the source), imported runs and data-parallel runs
// (Compute.Devices > 1). A run that resumes from a checkpoint in Checkpoint.Dir uses the set of
// its key, its checkpoint's values loaded into the set's Store, but a set is never made from it
// (it has no initial values).
//
// The model a run returns (Result.Trained) shares the set's Store until the next run takes the
// set; that run first gives it a Store of its own, with copies of its weights (detach), so a
// Result keeps what it was trained to. Programs.Evaluate keeps evaluation programs for any
// trained model, a loaded checkpoint's too (programs_eval.go).
type Programs struct {
	// MaxSets bounds the sets kept (0: no bound): beyond it, the set used longest ago is let go
	// (its compiled programs, model and initial values), and a run of its key compiles again.
	MaxSets int

	mu       sync.Mutex
	sets     map[ProgramKey]*programSet
	evals    map[evalProgramKey]*evalSet // programs_eval.go
	backends map[string]compute.Backend
}

// ProgramKey is what shapes a run's compiled programs, and so what a second run must share with
// the first to reuse them, derived from the table of settings (Fields): the settings that shape
// a program (Role Shapes), and those of the fed settings (Role Fed) that the run's programs hold
// as constants all the same (the row's keyed rule). Every other setting is not part of it: the
// graph reads a fed one at run time (optimizers.Scalar; the seed re-runs the kept variable
// initialisation, the validation's size pads its last batch), so a run that changes only those
// reuses the programs and compiles nothing.
type ProgramKey struct {
	// evalProgramKey: the backend (its name and identity: programs live on the backend that
	// compiled them), the dataset and its classes (the metrics, top-k), the architecture, its
	// head width and what it computes in.
	evalProgramKey
	// Devices the batches are sharded across (1: one device).
	Devices int
	// Shapes are the settings of Role Shapes, Constants those of Role Fed that this run's
	// programs hold as constants (Field.Keyed): "name=value" in table order, separated by "; ".
	Shapes, Constants string
}

// keySep separates the settings of ProgramKey.Shapes and ProgramKey.Constants.
const keySep = "; "

// String names the key's parts, for logs and errors.
func (k ProgramKey) String() string {
	return fmt.Sprintf("%s %s head %d %s on %d device(s) of %s; %s; %s", k.Dataset, k.Model, k.Head, k.Precision, k.Devices,
		k.Backend, k.Shapes, k.Constants)
}

// programKey is the key of a run of plan p on backend b, over devices devices.
func programKey(p *plan, b compute.Backend, devices int) ProgramKey {
	k := ProgramKey{evalProgramKey: newEvalProgramKey(b, p.Data.Spec, p.Model.Arch, p.Model.Head, p.Compute.Precision), Devices: devices}
	var shapes, constants []string
	for _, f := range fields {
		switch value, keyed := f.keyedValue(&p.Settings); {
		case f.Role == Shapes:
			shapes = append(shapes, f.Name+"="+value)
		case keyed:
			constants = append(constants, f.Name+"="+value)
		}
	}
	k.Shapes, k.Constants = strings.Join(shapes, keySep), strings.Join(constants, keySep)
	return k
}

// Len returns the number of sets of programs kept.
func (p *Programs) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sets)
}

// Keys returns the keys of the sets kept, in no particular order.
func (p *Programs) Keys() []ProgramKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := make([]ProgramKey, 0, len(p.sets))
	for k := range p.sets {
		keys = append(keys, k)
	}
	return keys
}

// backendFor returns the backend p made earlier for the backend name and devices (programs
// live on their backend), else a new one (kept by p when p is not nil).
func (p *Programs) backendFor(name string, devices int) (compute.Backend, error) {
	if p == nil {
		return backends.NewWithDevices(name, devices)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	key := fmt.Sprintf("%s/%d", name, devices)
	if b := p.backends[key]; b != nil {
		return b, nil
	}
	b, err := backends.NewWithDevices(name, devices)
	if err != nil {
		return nil, err
	}
	if p.backends == nil {
		p.backends = map[string]compute.Backend{}
	}
	p.backends[key] = b
	return b, nil
}

// take returns the set kept for key, marked in use, or nil.
func (p *Programs) take(key ProgramKey) *programSet {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sets[key]
	if s == nil || s.inUse {
		return nil
	}
	s.inUse = true
	return s
}

// put keeps s (again), not in use.
func (p *Programs) put(s *programSet) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sets == nil {
		p.sets = map[ProgramKey]*programSet{}
	}
	if old := p.sets[s.key]; old != nil && old != s && old.inUse {
		return // another run's set, in use: keep that one
	}
	s.inUse, s.used = false, time.Now()
	p.sets[s.key] = s
	for p.MaxSets > 0 && len(p.sets) > p.MaxSets {
		var oldest *programSet
		for _, o := range p.sets {
			if !o.inUse && o != s && (oldest == nil || o.used.Before(oldest.used)) {
				oldest = o
			}
		}
		if oldest == nil {
			return
		}
		delete(p.sets, oldest.key)
	}
}

// programSet is what a run compiled, and what Programs keeps of it (see Programs).
type programSet struct {
	programs *Programs // where it is kept; nil: not kept
	key      ProgramKey
	inUse    bool
	used     time.Time // when a run last handed it back (Programs.MaxSets lets go of the oldest)

	owner     *Trainer // the run using it, which the train.Trainer's Exec hook calls
	model     *cifarlib.Model
	store     *model.Store
	trainer   *train.Trainer
	evaluator *evalProgram
	// initial holds host copies of the variables' values when training started (by path).
	initial map[string]*tensors.Tensor
	// seed is the Seed the initial values were initialised from; initExec is GoMLX's variable
	// initialisation (Store.InitializeVariables' Exec, kept with its compiled program) and
	// initVars the variables it initialises, in its order: a run with another seed re-runs it.
	seed     int64
	initExec *model.Exec
	initVars []*model.Variable
	// whitenRecs are the training records airbench94's whitening filters whitenFilters (a copy
	// of their host values) were computed from (initWhitening); nil: none yet.
	whitenRecs    *data.Records
	whitenFilters *tensors.Tensor
	// last is the trained model of the last run that used the set (Result.Trained), whose
	// Store is the set's until the next run takes the set (see detach).
	last *Trained
	// reused is true while a run uses a set an earlier run compiled: its first step compiles
	// nothing.
	reused bool
}

// usePrograms gives t its set of programs: the one Env.Programs keeps for t's key, whose
// model, Store (restored to its initial values, or for a resumed run loaded from its checkpoint)
// and compiled programs t then uses, or a new set of t's, which Env.Programs keeps when the run
// ends.
func (t *Trainer) usePrograms() error {
	t.progs = &programSet{owner: t, model: t.model, store: t.store}
	p := t.env.Programs
	if why := ownPrograms(t); p == nil || why != "" {
		if p != nil {
			t.rt.reasons = map[string]string{runs.ProgramTrainStep: why}
		}
		return nil
	}
	key := programKey(t.plan, t.backend, t.devices.numDevices())
	reason := p.reason(key)
	s := p.take(key)
	_, resumed := t.ckpt.resumedAt()
	switch {
	case s == nil:
		t.progs.programs, t.progs.key = p, key
		t.rt.reasons = map[string]string{runs.ProgramTrainStep: reason}
		return nil
	case resumed && s.model.Input != t.model.Input: // the normalisation is a constant of the programs
		p.put(s)
		t.rt.reasons = map[string]string{runs.ProgramTrainStep: "the checkpoint's input normalisation is not the kept program's"}
		return nil
	}
	if err := s.reset(t.plan, resumed); err != nil {
		p.put(s)
		return err
	}
	s.owner, s.reused, t.progs = t, true, s
	t.model, t.store = s.model, s.store
	if t.ckpt != nil { // the handler loads a resumed run's checkpoint into the kept Store, and saves it from now on
		h, err := checkpoint.Build(t.store).Dir(t.plan.Checkpoint.Dir).Keep(t.plan.Checkpoint.Keep).Done()
		if err != nil {
			return fmt.Errorf("training: checkpoint directory %s: %w", t.plan.Checkpoint.Dir, err)
		}
		t.ckpt.handler = h
	}
	return recordSettings(t.plan, t.store, t.model.Input) // this run's, not the kept Store's earlier run's nor its checkpoint's
}

// reset readies the kept set s for a run of plan p: the last run's model detached, the variables
// at their initial values and p's fed values set; for a fresh run (not resumed) the variables of
// p's seed (feed). A resumed run's checkpoint then sets the rest (usePrograms).
func (s *programSet) reset(p *plan, resumed bool) error {
	if err := s.detach(); err != nil {
		return err
	}
	if err := s.restore(); err != nil {
		return err
	}
	if resumed {
		return optimizers.SetValues(s.store, p.fed())
	}
	return s.feed(p)
}

// ownPrograms says why t's run compiles programs of its own, which Programs does not keep: it
// is transferred, data-parallel or imported ("" when it can share them). A resumed run shares
// them: its checkpoint's values are loaded into the kept Store, and the programs are the same.
func ownPrograms(t *Trainer) string {
	switch {
	case t.plan.Transfer.From != "":
		return "a transferred run compiles its own"
	case t.devices.numDevices() > 1:
		return "a data-parallel run compiles its own"
	case t.ckpt != nil && t.ckpt.imported != nil:
		return "an imported run compiles its own"
	}
	return ""
}

// keep records the train.Trainer of s and hooks its Exec creation (train_compile.go).
func (s *programSet) keep(tr *train.Trainer) {
	s.trainer = tr
	tr.OnExecCreation(func(exec *model.Exec, kind train.GraphType) { s.owner.onExecCreated(exec, kind) })
}

// snapshot keeps host copies of the Store's variables, as training starts, for a later run
// (only for a set that Programs keeps).
func (s *programSet) snapshot(store *model.Store) {
	if s.programs == nil {
		return
	}
	initial := map[string]*tensors.Tensor{}
	for v := range store.IterVariables() {
		value, err := v.Value()
		if err != nil {
			return // not kept: the next run compiles its own
		}
		if initial[v.Path()], err = value.LocalClone(); err != nil {
			return
		}
	}
	s.initial = initial
}

// detach gives the trained model of the set's last run a Store of its own, holding copies of
// its trained values, before the next run restores the set's Store: a Result stays what it
// was trained to. Its evaluations then compile their own program.
func (s *programSet) detach() error {
	tr := s.last
	if tr == nil || tr.Store != s.store {
		return nil
	}
	own := model.NewStore()
	for v := range s.store.IterVariables() {
		value, err := v.Value()
		var c *tensors.Tensor
		if err == nil {
			c, err = value.LocalClone()
		}
		if err == nil {
			var nv *model.Variable
			if nv, err = own.CreateVariable(v.Path(), c); err == nil {
				nv.SetTrainable(v.Trainable)
			}
		}
		if err != nil {
			return fmt.Errorf("training: copying variable %s of the last run that used the kept programs: %w", v.Path(), err)
		}
	}
	for k, v := range s.store.IterParams() {
		own.SetParam(k, v)
	}
	tr.Store, tr.evaluator = own, nil
	s.last = nil
	return nil
}

// restore sets every variable of the Store to its value when training started.
func (s *programSet) restore() error {
	for v := range s.store.IterVariables() {
		value, ok := s.initial[v.Path()]
		if !ok {
			return fmt.Errorf("training: the kept programs of %s have no initial value for variable %s", s.key, v.Path())
		}
		c, err := value.LocalClone()
		if err == nil {
			err = v.SetValue(c)
		}
		if err != nil {
			return fmt.Errorf("training: restoring variable %s of the kept programs: %w", v.Path(), err)
		}
	}
	return nil
}

// feed sets the Store of s, just restored, to plan p's values: its fed hyper-parameters
// (package optimizers: fed values) and, for another Seed than the kept values', the random state and the
// variables GoMLX initialised from it, by re-running the kept initialisation (compiled once: it
// depends on the variables' shapes only), so the run starts where a fresh run of p does.
func (s *programSet) feed(p *plan) error {
	if err := optimizers.SetValues(s.store, p.fed()); err != nil {
		return err
	}
	if p.Run.Seed == s.seed {
		return nil
	}
	if s.initExec == nil {
		return fmt.Errorf("training: the kept programs of %s cannot initialise the variables for seed %d", s.key, p.Run.Seed)
	}
	if err := s.store.SetRNGStateFromSeed(p.Run.Seed); err != nil {
		return fmt.Errorf("training: seeding the model's random state: %w", err)
	}
	values, err := s.initExec.Call()
	if err == nil && len(values) != len(s.initVars) {
		err = fmt.Errorf("%d values for %d variables", len(values), len(s.initVars))
	}
	for i := 0; err == nil && i < len(values); i++ {
		err = s.initVars[i].SetValue(values[i])
	}
	if err != nil {
		return fmt.Errorf("training: initialising the variables for seed %d with the kept programs: %w", p.Run.Seed, err)
	}
	return nil
}

// release hands s back to Programs when the run ends, with the trained model of the run (a
// set without initial values, from a run that did not get to its first step, is not kept).
func (s *programSet) release(res *Result) {
	if s == nil || s.programs == nil || s.initial == nil || s.trainer == nil {
		return
	}
	s.owner, s.last, s.reused = nil, nil, false
	if res != nil {
		s.last = res.Trained
	}
	s.programs.put(s)
}

// Diff lists the parts of k that differ from o's, each as "NAME VALUE, not OTHER" (e.g.
// "batch size 128, not 64"): the backend, dataset, model, head, precision and devices, then the
// settings of Shapes and Constants in table order, named by their Label in Fields. It is why a run of
// key k compiles a program of its own instead of the one kept for o.
func (k ProgramKey) Diff(o ProgramKey) []string {
	var out []string
	a, b := reflect.ValueOf(k.evalProgramKey), reflect.ValueOf(o.evalProgramKey)
	for i := range a.NumField() {
		if x, y := a.Field(i).Interface(), b.Field(i).Interface(); x != y {
			out = append(out, fmt.Sprintf("%s %v, not %v", keyFieldName(a.Type().Field(i).Name), x, y))
		}
	}
	if k.Devices != o.Devices {
		out = append(out, fmt.Sprintf("devices %d, not %d", k.Devices, o.Devices))
	}
	out = append(out, diffSettings(k.Shapes, o.Shapes)...)
	return append(out, diffSettings(k.Constants, o.Constants)...)
}

// diffSettings lists the settings of a that differ from b's (both "name=value" joined by
// keySep), named by their Label.
func diffSettings(a, b string) []string {
	other := map[string]string{}
	for _, kv := range strings.Split(b, keySep) {
		name, value, _ := strings.Cut(kv, "=")
		other[name] = value
	}
	var out []string
	for _, kv := range strings.Split(a, keySep) {
		name, value, _ := strings.Cut(kv, "=")
		if was, ok := other[name]; ok && was == value || kv == "" {
			continue
		}
		label := name
		if f, err := LookupField(name); err == nil && f.Label != "" {
			label = f.Label
		}
		out = append(out, fmt.Sprintf("%s %s, not %s", label, value, other[name]))
	}
	return out
}

// reason says why a run of key compiles its train step: ReasonFirst when p keeps no programs,
// else how key differs from the kept key nearest to it (fewest differences), or that the
// programs of key are in use by another run.
func (p *Programs) reason(key ProgramKey) string {
	if p == nil {
		return ReasonFirst
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.sets[key]; s != nil && s.inUse {
		return "the kept one is in use by another run"
	}
	var nearest []string
	for k := range p.sets {
		if d := key.Diff(k); nearest == nil || len(d) < len(nearest) {
			nearest = d
		}
	}
	if len(nearest) == 0 {
		return ReasonFirst
	}
	return "new program: " + strings.Join(nearest, "; ")
}

// keyFieldName writes a ProgramKey field's name in words: "Precision" is "precision".
func keyFieldName(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
