package training

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/checkpoint"
)

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
	lr := p.learningRate
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

// keepHead carries the source's head with the backbone when the target has the source's
// number of classes (fine-tuning a model on its own task, or on another dataset of the same
// width) and Transfer.NewHead is false: the report's Reinitialized variables become KeptHead, with
// the source's shapes. A different width, or NewHead, leaves them re-initialised from the seed.
func (tt *trainTransfer) keepHead(p *plan) {
	r := tt.report
	if r == nil || p.Transfer.NewHead || p.Model.Head != r.FromHead || len(r.Reinitialized) == 0 {
		return
	}
	for _, v := range r.Reinitialized {
		r.KeptHead = append(r.KeptHead, TransferVariable{Path: v.Path, Shape: v.FromShape})
	}
	r.Reinitialized = nil
}

// keptHeadLine is the report's line for a carried head.
func (r *TransferReport) keptHeadLine() string {
	paths := make([]string, len(r.KeptHead))
	for i, v := range r.KeptHead {
		paths[i] = fmt.Sprintf("%s %v", v.Path, v.Shape)
	}
	return fmt.Sprintf("  head kept, carried bit for bit: %s: %s has the source's %d classes (NewHead, the setting new-head, "+
		"re-initialises it from the seed)\n", strings.Join(paths, ", "), r.Dataset, r.Head)
}

// sourceRun is the trained run a transfer starts from (Settings.Transfer.From), as the Trainer
// reads it for resolve: what the run recorded, and its checkpoint with the saved tensors.
type sourceRun struct {
	info    CheckpointInfo
	handler *checkpoint.Handler
	// dataset is the Spec ID of the dataset the run was trained on.
	dataset string
}

// readTransferSource reads the source run in from ("": no source, nil).
func readTransferSource(from string) (*sourceRun, error) {
	if from == "" {
		return nil, nil
	}
	h, info, err := readRunSource(from)
	if err != nil {
		return nil, err
	}
	return &sourceRun{info: info, handler: h, dataset: info.Data.Spec.ID()}, nil
}

// readRunSource opens the trained run in dir as a source (of a transfer, of DiagnoseRun):
// *checkpoints.IncompleteError and *checkpoints.CorruptError as they are, any other failure (no
// folder, no checkpoint, a foreign one) as *NotRunError.
func readRunSource(dir string) (*checkpoint.Handler, CheckpointInfo, error) {
	_, h, info, err := readRunCheckpoint(dir)
	if err != nil {
		switch err.(type) {
		case *checkpoints.IncompleteError, *checkpoints.CorruptError:
			return nil, info, err
		}
		return nil, info, &NotRunError{Dir: dir, Err: err}
	}
	return h, info, nil
}

// NotRunError reports that a folder given as a trained run (Transfer.From, cifarlab
// --from) is not the checkpoint directory of a cifarlib run: it is missing, a file, empty, or
// holds a GoMLX checkpoint that cifarlib did not write. errors.Is(err, checkpoints.ErrNoCheckpoint) holds.
type NotRunError struct {
	// Dir is the folder given.
	Dir string
	// Err is what opening it found.
	Err error
}

// Error implements error.
func (e *NotRunError) Error() string {
	return fmt.Sprintf("training: %s is not a trained cifarlib run (%v): give the checkpoint folder of a run "+
		"(Settings.Checkpoint.Dir of a run of cifarlab train or of a notebook's lab.Fit)", e.Dir, e.Err)
}

// Unwrap returns what opening the folder found (checkpoints.ErrNoCheckpoint, os.ErrNotExist, ...).
func (e *NotRunError) Unwrap() error { return e.Err }

// ArchMismatchError reports a transfer from a run of another architecture: its variables can
// not be carried into the requested model.
type ArchMismatchError struct {
	// Dir is the source run; Saved its architecture and Requested the one asked for.
	Dir, Saved, Requested string
}

// Error implements error: the Problem and its fix in a Go caller's words (training.Settings'
// fields; cmd/cifarlab says it in flags).
func (e *ArchMismatchError) Error() string {
	return fmt.Sprintf("%s; use Model.Arch %q, or training.ArchOfSource with Transfer.From", e.Problem(), e.Saved)
}

// Problem is the error without its fix: what was asked of which run.
func (e *ArchMismatchError) Problem() string {
	return fmt.Sprintf("training: run %s is a %s, but the model asked for is a %s: the backbone can only be carried "+
		"into the same architecture", e.Dir, e.Saved, e.Requested)
}

// datasetSettings names the dataset with the given Spec ID by its settings: "dataset=cifar100
// labels=coarse".
func datasetSettings(id string) string {
	if id == "cifar100-coarse" {
		return "dataset=cifar100 labels=coarse"
	}
	return "dataset=" + id
}

// DiagnoseRun diagnoses the trained run in runDir (a checkpoint directory) against the dataset
// target under root: the model as the run saved it (its architecture and head) on the target's
// labels, as Diagnose does, plus the dataset-switch checklist in Diagnosis.Checklist (head width
// against the classes, label range, the normalisation statistics the run was trained with
// against the target's, the metrics, the class names), each OK, FAIL or NOTE with the fix. A
// FAIL makes the Diagnosis not OK; its Fix is then the transfer (cifarlab train --from). The run
// errors are those of a transfer's source (*NotRunError, *checkpoints.IncompleteError,
// *checkpoints.CorruptError).
func DiagnoseRun(runDir string, target data.Spec, root string, opts cifarlib.DiagnoseOptions) (*cifarlib.Diagnosis, error) {
	_, info, err := readRunSource(runDir)
	if err != nil {
		return nil, err
	}
	source := info.Data.Spec
	m, err := info.modelBuilder(target).Done()
	if err != nil {
		return nil, fmt.Errorf("training: run %s: %w", runDir, err)
	}
	d, err := cifarlib.DiagnoseWith(m, root, opts)
	if err != nil {
		return nil, err
	}
	d.From, d.FromDataset = runDir, source.ID()
	// The head is the run's, not an override the user set: say where it came from.
	d.Model = fmt.Sprintf("%s trained on %s (its head: %d outputs), checked against %s (%d classes)",
		m.Arch, source.ID(), info.Model.Head, target.ID(), target.NumClasses)
	if d.Summary != nil {
		d.Summary.Model = d.Model
	}
	if d.HeadOverridden {
		// The factory's advice (build the model for the dataset) is the wrong fix for a trained
		// run: its problem line says what the checklist does.
		he := &cifarlib.HeadMismatchError{Dataset: d.Dataset, HeadWidth: d.HeadWidth, NumClasses: d.NumClasses, Overridden: true}
		for i, p := range d.Problems {
			if p == he.Error() {
				d.Problems[i] = fmt.Sprintf("the run's head has %d outputs but %s has %d classes: see the checklist",
					d.HeadWidth, d.Dataset, d.NumClasses)
			}
		}
		d.HeadOverridden = false
	}
	transfer := fmt.Sprintf("transfer the run (training.Settings.Transfer.From; the settings from=%s %s), which carries the "+
		"backbone and initialises a new head of %d", runDir, datasetSettings(target.ID()), target.NumClasses)
	d.Checklist = switchChecklist(info.Model.Head, source, target, d.Splits, transfer)
	ownNormalizationItem(d.Checklist, info.Input, target)
	if i := slices.IndexFunc(d.Checklist, func(c cifarlib.CheckItem) bool { return c.Status == cifarlib.CheckFail }); i >= 0 {
		d.OK, d.Fix = false, transfer
		if !strings.HasPrefix(d.Verdict, "MISMATCH") && !strings.HasPrefix(d.Verdict, "PROBLEM") {
			d.Verdict = fmt.Sprintf("MISMATCH: run %s (%s) can not be used on %s as it is: %s", runDir, source.ID(), target.ID(),
				d.Checklist[i].Detail)
		}
	}
	return d, nil
}

// switchChecklist compares a run trained on source with a head of head outputs to target.
func switchChecklist(head int, source, target data.Spec, splits []data.SplitLabels, transfer string) []cifarlib.CheckItem {
	var items []cifarlib.CheckItem
	add := func(item string, ok bool, detail, fix string) {
		c := cifarlib.CheckItem{Item: item, Status: cifarlib.CheckOK, Detail: detail}
		if !ok {
			c.Status, c.Fix = cifarlib.CheckFail, fix
		}
		items = append(items, c)
	}

	add("head width", head == target.NumClasses, fmt.Sprintf("the run's head has %d outputs, %s has %d classes",
		head, target.ID(), target.NumClasses), transfer)

	var parts []string
	beyond, lo, hi := 0, -1, -1
	for _, s := range splits {
		beyond += s.BeyondHead
		parts = append(parts, fmt.Sprintf("%d of %d %s", s.BeyondHead, s.Count, s.Split))
		if s.Count > 0 && (lo < 0 || s.Min < lo) {
			lo = s.Min
		}
		hi = max(hi, s.Max)
	}
	rangeDetail := fmt.Sprintf("%s labels %d..%d fit the head's %d outputs", target.ID(), lo, hi, head)
	if beyond > 0 {
		rangeDetail = fmt.Sprintf("%s labels %d..%d, the head covers 0..%d: %s labels are beyond it (an unguarded "+
			"loss gives them exactly 0; the guard stops)", target.ID(), lo, hi, head-1, strings.Join(parts, " and "))
	}
	add("label range", beyond == 0, rangeDetail, transfer)

	items = append(items, normalisationCheck(source, target))

	metrics := "top-1 accuracy"
	if target.NumClasses > 10 {
		metrics = "top-1 and top-5 accuracy (with 100 or 20 classes top-1 alone undersells a model)"
	}
	items = append(items, cifarlib.CheckItem{Item: "metrics", Status: cifarlib.CheckOK, Detail: fmt.Sprintf("%s is evaluated with %s and "+
		"per-class accuracy over its %d classes; cifarlib picks them from the dataset", target.ID(), metrics, target.NumClasses)})

	same := slices.Equal(source.ClassNames, target.ClassNames)
	namesDetail := fmt.Sprintf("the run's %d classes are %s's", len(source.ClassNames), target.ID())
	if !same {
		namesDetail = fmt.Sprintf("the run's %d classes (%s) are not %s's %d (%s): output i of the old head means "+
			"another class", len(source.ClassNames), firstNames(source.ClassNames), target.ID(), len(target.ClassNames),
			firstNames(target.ClassNames))
	}
	add("class names", same, namesDetail, transfer)
	return items
}

// normalisationCheck compares the normalisation statistics a run was trained with (source's)
// with target's.
func normalisationCheck(source, target data.Spec) cifarlib.CheckItem {
	shift := 0.0 // The largest gap between the two normalisations, in the run's standard deviations.
	for c := range data.ImageChannels {
		shift = math.Max(shift, math.Abs(float64(target.Mean[c]-source.Mean[c]))/float64(source.Std[c]))
		shift = math.Max(shift, math.Abs(float64(target.Std[c]/source.Std[c])-1))
	}
	norm := cifarlib.CheckItem{Item: "normalisation", Status: cifarlib.CheckOK, Detail: fmt.Sprintf("the run was trained with %s's "+
		"statistics, the same as %s's (mean %v, std %v)", source.ID(), target.ID(), source.Mean, source.Std)}
	if source.Mean != target.Mean || source.Std != target.Std {
		norm.Status = cifarlib.CheckNote
		norm.Detail = fmt.Sprintf("the run was trained on inputs normalised with %s's mean %v and std %v; %s's are %v "+
			"and %v (up to %.2f of the run's standard deviation apart)", source.ID(), source.Mean, source.Std,
			target.ID(), target.Mean, target.Std, shift)
		norm.Fix = "cifarlib normalises each dataset with its own statistics: fine-tuning adapts the batch norms to " +
			"them; a frozen backbone (linear probe) sees its inputs shifted by that much"
	}
	return norm
}

// firstNames lists the first three names, then "...".
func firstNames(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:3], ", ") + ", ..."
}

// ownNormalizationItem rewrites the checklist's normalisation item for a run that records its
// own input normalisation (an imported model's): its model re-normalises whatever dataset it
// sees to those statistics, so the target's differ from nothing the weights see.
func ownNormalizationItem(items []cifarlib.CheckItem, own cifarlib.InputNormalization, target data.Spec) {
	if own.IsZero() {
		return
	}
	for i := range items {
		if items[i].Item == "normalisation" {
			items[i] = cifarlib.CheckItem{Item: "normalisation", Status: cifarlib.CheckOK, Detail: fmt.Sprintf("the run applies its "+
				"own %v at its input: %s's images, normalised with its statistics (mean %v, std %v), are re-normalised to it",
				own, target.ID(), target.Mean, target.Std)}
		}
	}
}
