package training

// Transfer: a run trained on one dataset carried to another (Settings.Transfer.From).
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
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// FreezeBackbone is the Transfer.Freeze value of a linear probe: only the head trains.
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
	// Transfer.NewHead is false: the head is carried bit for bit with the backbone.
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

// newTrainTransfer is the transfer part of a Trainer for plan p, whose store is fresh, or
// resumed from the run's own checkpoint: a fresh store gets the source's backbone (carry), a
// resumed one keeps its trained values. Without From it returns nil, or, with Freeze, a
// transfer without a source (report nil): the backbone as initialised from the seed, frozen
// (the random-feature baseline of a linear probe).
func newTrainTransfer(p *plan, store *model.Store, resumed bool, log runLog) (*trainTransfer, error) {
	if p.source == nil && p.Transfer.Freeze == "" {
		return nil, nil
	}
	tt := &trainTransfer{freeze: p.Transfer.Freeze == FreezeBackbone, lrRatio: 1}
	tt.scope, tt.head = archScopes(p.Model.Arch)
	if p.source == nil {
		return tt, nil
	}
	r, err := tt.sortSource(p)
	if err != nil {
		return nil, err
	}
	lr := learningRate(p.Optimizer)
	r.Dataset, r.Head, r.Freeze, r.LearningRate = p.dataset, p.Model.Head, p.Transfer.Freeze, lr
	r.BackboneLearningRate = lr
	switch {
	case tt.freeze:
		r.BackboneLearningRate = 0
	case p.Transfer.BackboneLearningRate > 0:
		r.BackboneLearningRate = p.Transfer.BackboneLearningRate
		tt.lrRatio = p.Transfer.BackboneLearningRate / lr
	}
	for i := range r.Reinitialized {
		v := &r.Reinitialized[i]
		v.Shape = append([]int{}, v.FromShape...)
		v.Shape[len(v.Shape)-1] = p.Model.Head // The dense head's weights [in, classes] and biases [classes].
	}
	tt.report = r
	tt.keepHead(p)
	if resumed {
		r.Resumed, tt.values = true, nil
		return tt, nil
	}
	if err := tt.carry(store); err != nil {
		return nil, err
	}
	head := fmt.Sprintf("head initialised afresh at %d", p.Model.Head)
	if len(r.KeptHead) > 0 {
		head = fmt.Sprintf("head of %d classes kept (Transfer.NewHead, the setting new-head, re-initialises it)", p.Model.Head)
	}
	log("transferred from %s: carried %d backbone variables, %s", p.Transfer.From, len(r.Carried), head)
	return tt, nil
}

// sortSource sorts the variables of p's source run into the backbone's, carried (their values
// kept in tt.values), the head's, initialised afresh, and the others, dropped.
func (tt *trainTransfer) sortSource(p *plan) (*TransferReport, error) {
	info := p.source.info
	tt.values = map[string]*tensors.Tensor{}
	r := &TransferReport{From: p.Transfer.From, FromStep: info.Step, FromDataset: p.source.dataset, FromHead: info.Model.Head, Model: info.Model.Arch}
	const prefix = "var:" // GoMLX's checkpoint key of a variable is "var:" + its path.
	saved := p.source.handler.LoadedVariables()
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
		return nil, &checkpoints.CorruptError{Dir: p.Transfer.From, Err: fmt.Errorf("it holds no head variables (%s*)", tt.head)}
	}
	return r, nil
}

// carry creates the backbone's variables in store with the source's values. It is called on a
// fresh run only: a resumed run has them, trained, in its own checkpoint.
func (tt *trainTransfer) carry(store *model.Store) error {
	for _, v := range append(tt.report.Carried, tt.report.KeptHead...) {
		if _, err := store.CreateVariable(v.Path, tt.values[v.Path]); err != nil {
			return fmt.Errorf("training: carrying %s from %s: %w", v.Path, tt.report.From, err)
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

// Transfer returns the report of a transferred run (Settings.Transfer.From), or nil.
func (t *Trainer) Transfer() *TransferReport {
	if t.transfer == nil {
		return nil
	}
	return t.transfer.report // nil for a frozen backbone without From
}
