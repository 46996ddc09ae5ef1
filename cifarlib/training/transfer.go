package training

// Transfer: a run trained on one dataset carried to another (training.Config.From).
//
// GoMLX v0.28 has no partial checkpoint load (ml/model/checkpoint's TODO "Allow to specify
// parts of the model to load ... for transfer learning"): a checkpoint whose head differs
// panics when the graph is built ("requested to reuse variable ..., but with different shape"),
// and a handler created after the model silently replaces the variable's shape. So the source
// checkpoint is read on its own, and only the backbone's variables (everything under the
// architecture's scope except "head") are created in the new run's Store, with the saved
// tensors as they are: bit for bit, weights and batch-norm statistics alike. The head's
// variables do not exist, so the model's initializer creates them at the target's width from the
// new run's seed. Everything else of the source is dropped: the optimizer's state (the Adam
// moments of the backbone as well as the head's, its step counter and learning rate), the global
// step, the guard's and trainer's counters and the random-number state. The new run's optimizer
// starts from zero moments for every variable, as PyTorch's does when a new optimizer is made
// for the re-headed model.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/checkpoint"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// FreezeBackbone is the Config.Freeze value of a linear probe: only the head trains.
const FreezeBackbone = "backbone"

// TransferVariable is one variable of a transfer: its path and shape (and, for a
// re-initialised head variable, the shape it had in the source run).
type TransferVariable struct {
	Path      string `json:"path"`
	Shape     []int  `json:"shape"`
	FromShape []int  `json:"from_shape,omitempty"`
}

// TransferReport says what a transferred run carried from its source, what it initialised
// afresh and why, and what it dropped. Result.Transfer holds it; nb.Show and the CLI print
// it (String).
type TransferReport struct {
	// From is the source run's checkpoint directory, FromStep the step it was saved at,
	// FromDataset (Spec.ID()) and FromHead what it was trained for.
	From        string `json:"from"`
	FromStep    int    `json:"from_step"`
	FromDataset string `json:"from_dataset"`
	FromHead    int    `json:"from_head"`
	// Model is the architecture; Dataset and Head the target's.
	Model   string `json:"model"`
	Dataset string `json:"dataset"`
	Head    int    `json:"head"`
	// Carried lists the backbone variables set from the source bit for bit (weights and
	// batch-norm statistics); CarriedValues counts their values.
	Carried       []TransferVariable `json:"carried"`
	CarriedValues int                `json:"carried_values"`
	// Reinitialized lists the head's variables, initialised afresh from the run's seed at the
	// target's width (their shape in the source in FromShape).
	Reinitialized []TransferVariable `json:"reinitialized"`
	// KeptHead lists them instead when the target has the source's number of classes and
	// Config.NewHead is false: the head is carried bit for bit with the backbone.
	KeptHead []TransferVariable `json:"kept_head,omitempty"`
	// Dropped lists the source's other variables, which start again: the optimizer's state
	// (of the backbone too), the global step, the guard's and trainer's counters, the RNG state.
	Dropped []string `json:"dropped"`
	// Freeze is "" or FreezeBackbone; LearningRate the head's and BackboneLearningRate the
	// backbone's (0 when frozen).
	Freeze               string  `json:"freeze,omitempty"`
	LearningRate         float64 `json:"learning_rate"`
	BackboneLearningRate float64 `json:"backbone_learning_rate"`
	// Resumed is true when the run continued from its own checkpoint: the carried values were
	// set when it started and have trained since.
	Resumed bool `json:"resumed,omitempty"`
}

// String is the report in a few lines.
func (r *TransferReport) String() string {
	if r == nil {
		return "not transferred (trained from scratch)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "transferred from %s (%s, head %d, step %d) to %s (head %d)\n", r.From, r.FromDataset, r.FromHead,
		r.FromStep, r.Dataset, r.Head)
	what := "weights"
	for _, v := range r.Carried {
		if strings.HasSuffix(v.Path, "/mean") || strings.HasSuffix(v.Path, "/variance") {
			what = "weights and batch-norm statistics"
			break
		}
	}
	fmt.Fprintf(&b, "  carried bit for bit: %d backbone variables of %s (%d values: %s)\n", len(r.Carried), r.Model, r.CarriedValues, what)
	heads := make([]string, len(r.Reinitialized))
	for i, v := range r.Reinitialized {
		heads[i] = fmt.Sprintf("%s %v (was %v)", v.Path, v.Shape, v.FromShape)
	}
	if len(r.KeptHead) > 0 {
		b.WriteString(r.keptHeadLine())
	} else {
		fmt.Fprintf(&b, "  re-initialised from the seed: %s: %s has %d classes, the source's head %d\n",
			strings.Join(heads, ", "), r.Dataset, r.Head, r.FromHead)
	}
	fmt.Fprintf(&b, "  dropped, starting again: %d variables (optimizer state of backbone and head, global step, "+
		"guard and trainer counters, random-number state)\n", len(r.Dropped))
	if r.Freeze == FreezeBackbone {
		fmt.Fprintf(&b, "  recipe: linear probe: backbone frozen (its %s unchanged), head learning rate %g\n", what, r.LearningRate)
	} else {
		fmt.Fprintf(&b, "  recipe: fine-tune everything: head learning rate %g, backbone learning rate %g\n", r.LearningRate, r.BackboneLearningRate)
	}
	if r.Resumed {
		b.WriteString("  resumed from this run's own checkpoint: the carried values were set at its start\n")
	}
	return b.String()
}

// trainTransfer is the transfer side of a Trainer.
type trainTransfer struct {
	report *TransferReport
	info   CheckpointInfo
	// values are the source's backbone tensors by path, until carried.
	values map[string]*tensors.Tensor
	// scope is the architecture's scope ("/cnn/") and head its head's ("/cnn/head/").
	scope, head string
	freeze      bool
	// lrRatio scales the backbone's updates (BackboneLearningRate / LearningRate); 1: none.
	lrRatio float64
}

// archScopes are the variable path prefixes of arch's model and of its classifier head
// ("/cnn/" and "/cnn/head/").
func archScopes(arch string) (scope, head string) {
	return "/" + arch + "/", "/" + arch + "/head/"
}

// isBackbone says whether the variable path belongs to the backbone.
func (tt *trainTransfer) isBackbone(path string) bool {
	return strings.HasPrefix(path, tt.scope) && !strings.HasPrefix(path, tt.head)
}

// openTransfer reads the source run of cfg.From, before cfg's defaults are filled in: a Model
// left empty becomes the source's. Without From it returns nil, or, with Freeze, a transfer
// without a source (report nil): the backbone as initialised from the seed, frozen (the
// random-feature baseline of a linear probe).
func openTransfer(cfg *Config) (*trainTransfer, error) {
	if cfg.From == "" {
		if cfg.BackboneLearningRate != 0 {
			return nil, &ConfigError{Field: "BackboneLearningRate", Value: fmt.Sprint(cfg.BackboneLearningRate),
				Reason: "it applies to a transferred run: set From to the trained run's checkpoint directory"}
		}
		if cfg.NewHead {
			return nil, &ConfigError{Field: "NewHead", Value: "true",
				Reason: "it applies to a transferred run: set From to the trained run's checkpoint directory"}
		}
		if cfg.Freeze == "" {
			return nil, nil
		}
		return &trainTransfer{}, nil
	}
	h, info, err := readRunSource(cfg.From)
	if err != nil {
		return nil, err
	}
	if cfg.Model == "" {
		cfg.Model = info.Model
	}
	tt := &trainTransfer{info: info, values: map[string]*tensors.Tensor{}}
	tt.scope, tt.head = archScopes(info.Model)
	r := &TransferReport{From: cfg.From, FromStep: info.Step, FromDataset: specID(info), FromHead: info.Head, Model: info.Model}
	const prefix = "var:" // GoMLX's checkpoint key of a variable is "var:" + its path.
	saved := h.LoadedVariables()
	for _, key := range slices.Sorted(maps.Keys(saved)) {
		path, value := strings.TrimPrefix(key, prefix), saved[key]
		dims := append([]int{}, value.Shape().Dimensions...)
		switch {
		case strings.HasPrefix(path, tt.head):
			r.Reinitialized = append(r.Reinitialized, TransferVariable{Path: path, FromShape: dims})
			tt.values[path] = value // carried when the target has the same width (keepHead)
		case tt.isBackbone(path):
			tt.values[path] = value
			r.Carried = append(r.Carried, TransferVariable{Path: path, Shape: dims})
			r.CarriedValues += value.Shape().Size()
		default:
			r.Dropped = append(r.Dropped, path)
		}
	}
	if len(r.Reinitialized) == 0 { // The linear model is all head: it carries nothing, but has one.
		return nil, &CorruptCheckpointError{Dir: cfg.From, Err: fmt.Errorf("it holds no head variables (%s*)", tt.head)}
	}
	tt.report = r
	return tt, nil
}

// readRunSource opens the trained run in dir as a source (of a transfer, of DiagnoseRun):
// *IncompleteCheckpointError and *CorruptCheckpointError as they are, any other failure (no
// folder, no checkpoint, a foreign one) as *NotRunError.
func readRunSource(dir string) (*checkpoint.Handler, CheckpointInfo, error) {
	_, h, info, err := readRunCheckpoint(dir)
	if err != nil {
		switch err.(type) {
		case *IncompleteCheckpointError, *CorruptCheckpointError:
			return nil, info, err
		}
		return nil, info, &NotRunError{Dir: dir, Err: err}
	}
	return h, info, nil
}

// specID is the Spec ID of the dataset a checkpoint recorded.
func specID(info CheckpointInfo) string {
	if spec, err := info.Spec(); err == nil {
		return spec.ID()
	}
	return info.Dataset
}

// check validates the transfer against cfg (defaults filled in) and the model built for it.
func (tt *trainTransfer) check(cfg *Config, m *cifarlib.Model) error {
	if tt == nil {
		return nil
	}
	if tt.report == nil { // Freeze without From: the seed's backbone.
		tt.scope, tt.head = archScopes(cfg.Model)
	} else if cfg.Model != tt.info.Model {
		return &ArchMismatchError{Dir: cfg.From, Saved: tt.info.Model, Requested: cfg.Model}
	}
	switch cfg.Freeze {
	case "":
	case FreezeBackbone:
		if cfg.BackboneLearningRate != 0 {
			return &ConfigError{Field: "BackboneLearningRate", Value: fmt.Sprint(cfg.BackboneLearningRate),
				Reason: "a frozen backbone does not train: leave it 0 with Freeze \"backbone\""}
		}
		tt.freeze = true
	default:
		return &ConfigError{Field: "Freeze", Value: fmt.Sprintf("%q", cfg.Freeze), Reason: "use \"\" (fine-tune everything) or \"backbone\" (linear probe)"}
	}
	if cfg.BackboneLearningRate < 0 {
		return &ConfigError{Field: "BackboneLearningRate", Value: fmt.Sprint(cfg.BackboneLearningRate), Reason: "must not be negative (0: the same as LearningRate)"}
	}
	if cfg.Head > 0 && cfg.Head != cfg.Spec.NumClasses {
		return &ConfigError{Field: "Head", Value: fmt.Sprint(cfg.Head), Reason: "a transferred run's head is sized from Spec: leave Head 0"}
	}
	tt.lrRatio = 1
	r := tt.report
	if r == nil {
		return nil
	}
	r.Dataset, r.Head, r.Freeze, r.LearningRate = cfg.Spec.ID(), m.NumClasses, cfg.Freeze, cfg.LearningRate
	r.BackboneLearningRate = cfg.LearningRate
	switch {
	case tt.freeze:
		r.BackboneLearningRate = 0
	case cfg.BackboneLearningRate > 0:
		r.BackboneLearningRate = cfg.BackboneLearningRate
		tt.lrRatio = cfg.BackboneLearningRate / cfg.LearningRate
	}
	for i := range r.Reinitialized {
		v := &r.Reinitialized[i]
		v.Shape = append([]int{}, v.FromShape...)
		v.Shape[len(v.Shape)-1] = m.NumClasses // The dense head's weights [in, classes] and biases [classes].
	}
	tt.keepHead(cfg, m)
	return nil
}

// carry creates the backbone's variables in store with the source's values. It is called on a
// fresh run only: a resumed run has them, trained, in its own checkpoint.
func (tt *trainTransfer) carry(store *model.Store) error {
	for _, v := range append(tt.report.Carried, tt.report.KeptHead...) {
		if _, err := store.CreateVariable(v.Path, tt.values[v.Path]); err != nil {
			return fmt.Errorf("cifarlib: carrying %s from %s: %w", v.Path, tt.report.From, err)
		}
	}
	tt.values = nil
	return nil
}

// modelFn builds m's graph for a transferred run. With a frozen backbone, the model is built in
// inference mode (batch norm normalises with the carried moving statistics and does not update
// them, like PyTorch's backbone.eval()) and the backbone's variables are marked not trainable
// after the layers are built (GoMLX's batch norm marks its scale and offset trainable each time).
func (tt *trainTransfer) modelFn(m *cifarlib.Model, scope *model.Scope, spec any, inputs []*graph.Node) []*graph.Node {
	if !tt.freeze {
		return m.ModelFn(scope, spec, inputs)
	}
	g, store := inputs[0].Graph(), scope.Store()
	training := store.IsTraining(g)
	store.SetTraining(g, false)
	logits := m.ModelFn(scope, spec, inputs)
	store.SetTraining(g, training)
	for v := range store.IterVariables() {
		if tt.isBackbone(v.Path()) {
			v.SetTrainable(false)
		}
	}
	return logits
}

// wrapOptimizer returns opt, or, with a separate backbone learning rate, opt with the
// backbone's updates scaled by BackboneLearningRate/LearningRate.
func (tt *trainTransfer) wrapOptimizer(opt optimizer.Interface) optimizer.Interface {
	if tt == nil || tt.lrRatio == 1 {
		return opt
	}
	return &backboneRateOptimizer{inner: opt, tt: tt}
}

// backboneRateOptimizer runs its inner optimizer, then scales each backbone variable's update
// (new - old) by ratio. Every optimizer cifarlib offers (SGD, Adam, AdamW, Adamax, RMSProp)
// moves a variable by the learning rate times a step that does not depend on it (AdamW's decay
// is scaled by the learning rate too), and its moments do not depend on the learning rate, so
// this is the inner optimizer run with learning rate LearningRate*ratio for the backbone, the
// schedule included, up to float32 rounding.
type backboneRateOptimizer struct {
	inner optimizer.Interface
	tt    *trainTransfer
}

// UpdateGraph implements optimizer.Interface.
func (o *backboneRateOptimizer) UpdateGraph(scope *model.Scope, g *graph.Graph, loss *graph.Node) {
	before := o.backboneValues(scope, g)
	o.inner.UpdateGraph(scope, g, loss)
	o.scale(g, before)
}

// UpdateGraphWithGradients implements train.OptimizeWithGradients when the inner optimizer does.
func (o *backboneRateOptimizer) UpdateGraphWithGradients(scope *model.Scope, grads []*graph.Node, lossDType dtypes.DType) {
	inner, ok := o.inner.(train.OptimizeWithGradients)
	if !ok || len(grads) == 0 {
		panic(fmt.Errorf("cifarlib: optimizer %T does not take accumulated gradients", o.inner))
	}
	g := grads[0].Graph()
	before := o.backboneValues(scope, g)
	inner.UpdateGraphWithGradients(scope, grads, lossDType)
	o.scale(g, before)
}

// Clear implements optimizer.Interface.
func (o *backboneRateOptimizer) Clear(scope *model.Scope) error { return o.inner.Clear(scope) }

// backboneValue is a trainable backbone variable and its value before the optimizer's update.
type backboneValue struct {
	v   *model.Variable
	old *graph.Node
}

func (o *backboneRateOptimizer) backboneValues(scope *model.Scope, g *graph.Graph) []backboneValue {
	var before []backboneValue
	for v := range scope.Store().IterVariables() {
		if v.Trainable && o.tt.isBackbone(v.Path()) && v.InUseByGraph(g) {
			before = append(before, backboneValue{v: v, old: v.NodeValue(g)})
		}
	}
	return before
}

func (o *backboneRateOptimizer) scale(g *graph.Graph, before []backboneValue) {
	for _, b := range before {
		step := graph.Sub(b.v.NodeValue(g), b.old)
		b.v.SetNodeValue(graph.Add(b.old, graph.MulScalar(step, o.tt.lrRatio)))
	}
}

// startTransfer carries the source's backbone into the Trainer's store on a fresh run; a run
// resumed from its own checkpoint keeps its trained values.
func (t *Trainer) startTransfer() error {
	if t.transfer == nil || t.transfer.report == nil {
		return nil
	}
	if t.ckpt != nil && t.ckpt.resumed != nil {
		t.transfer.report.Resumed = true
		t.transfer.values = nil
		return nil
	}
	if err := t.transfer.carry(t.store); err != nil {
		return err
	}
	head := fmt.Sprintf("head initialised afresh at %d", t.model.NumClasses)
	if len(t.transfer.report.KeptHead) > 0 {
		head = fmt.Sprintf("head of %d classes kept (Config.NewHead, --new-head, re-initialises it)", t.model.NumClasses)
	}
	t.logf("transferred from %s: carried %d backbone variables, %s", t.cfg.From, len(t.transfer.report.Carried), head)
	return nil
}

// Transfer returns the report of a transferred run (training.Config.From), or nil.
func (t *Trainer) Transfer() *TransferReport {
	if t.transfer == nil {
		return nil
	}
	return t.transfer.report // nil for a frozen backbone without From
}
