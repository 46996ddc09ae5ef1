package training

import (
	"context"
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/distributed"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// EvalResult is an evaluation of a model on one split: overall loss, accuracy and top-k
// accuracy, per-class accuracy and the confusion matrix.
type EvalResult struct {
	// Timeline is where the evaluation's time went, from its process start (nil for the
	// evaluations of a Trainer: its Result has the run's).
	Timeline *runs.Timeline `json:"timeline,omitempty"`
	// Dataset is the dataset id ("cifar10", "cifar100", "cifar100-coarse") and Split the split
	// evaluated ("test" or "train").
	Dataset string `json:"dataset"`
	Split   string `json:"split"`
	// HeadWidth is the number of logits of the model.
	HeadWidth int `json:"head_width"`
	// DataKind is what the evaluated records are (data.Records.Kind: synthetic, real and
	// verified or not; "" when not known); Summary says it.
	DataKind string `json:"data_kind,omitempty"`
	// Examples is the number of examples evaluated.
	Examples int `json:"examples"`
	// Loss is the mean cross-entropy over the examples whose label lies within the head
	// (OutOfRange examples have no defined loss and are left out).
	Loss float64 `json:"loss"`
	// Accuracy is the fraction of all examples whose arg-max logit is their label.
	Accuracy float64 `json:"accuracy"`
	// TopK is k of TopKAccuracy: 5 for CIFAR-100 (fine and coarse), 0 (not computed) otherwise.
	TopK int `json:"top_k,omitempty"`
	// TopKAccuracy is the fraction of examples whose label is among the k largest logits.
	TopKAccuracy float64 `json:"top_k_accuracy,omitempty"`
	// OutOfRange counts examples whose label is outside [0, HeadWidth): the model cannot
	// predict them (a head narrower than the dataset); they count as misses.
	OutOfRange int `json:"out_of_range"`
	// PerClass has one entry per class of the dataset, in label order.
	PerClass []ClassAccuracy `json:"per_class"`
	// Confusion[label][prediction] counts examples; it has one row per class of the dataset and
	// HeadWidth columns.
	Confusion [][]int `json:"confusion"`
	// TTA is the test-time augmentation whose averaged logits were evaluated (EvalOptions.TTA;
	// TTANone, 0, left out of the JSON).
	TTA int `json:"tta,omitempty"`
}

// ClassAccuracy is the accuracy of one class.
type ClassAccuracy struct {
	Label int    `json:"label"`
	Name  string `json:"name"`
	// Examples of this class evaluated, and how many were predicted correctly.
	Examples int `json:"examples"`
	Correct  int `json:"correct"`
	// Accuracy is Correct/Examples (0 when there are no examples).
	Accuracy float64 `json:"accuracy"`
}

// EvalOptions tune Evaluate. The zero value evaluates the whole split at batch size
// defaultEvalBatchSize (100).
type EvalOptions struct {
	// BatchSize of the evaluation batches. Default defaultEvalBatchSize (100). The last, partial
	// batch of a split is padded to it, so that one compiled program evaluates every batch.
	BatchSize int
	// MaxExamples limits the evaluation to the first MaxExamples examples (0: all).
	MaxExamples int
	// Split names the split in the result ("test" by default).
	Split string
	// Devices shards each batch across this many devices of the backend (DevicesAll: all of
	// them; 0 or 1: one device). See evalProgram.useDevices.
	Devices int
	// TTA is the test-time augmentation: TTANone (0, the default), TTAMirror (1) or
	// TTAMirrorTranslate (2); see TTAMirrorTranslate. The views' logits are averaged inside the
	// evaluation program (one program per level), so the loss, accuracy and predictions are
	// those of the averaged logits. The views go through the model as one batch: a level of v
	// views (2 or 6) takes about v times the compute and activation memory of TTANone at the
	// same BatchSize (lower BatchSize if memory is short), and compiles no longer.
	TTA int

	// TimelineFrom is when the evaluation's timeline (EvalResult.Timeline) starts: zero, the
	// process start; a process that outlives notebook cells gives the cell's start.
	TimelineFrom time.Time
	// OnEvent, when set, is called as the evaluation starts, compiles and after each batch
	// (Event: EventEval, EventCompile). The evaluations of a training run report to its
	// Env.OnEvent instead.
	OnEvent func(Event) `json:"-"`

	// purpose is runs.PhaseValidation for a Trainer's evaluations during training, else
	// runs.PhaseEval: the phase of the timeline.
	purpose runs.Phase
}

// evalProgram evaluates a model whose variables are in a GoMLX model.Store. It compiles its
// graph once per batch shape and can be reused, e.g. for periodic evaluations during training.
type evalProgram struct {
	backend compute.Backend
	model   *cifarlib.Model
	store   *model.Store
	topK    int
	// execs holds the evaluation program of each TTA level used so far, for e.devices devices.
	execs map[int]*model.Exec
	// devices is the number of devices the execs shard batches across (0: one device,
	// unsharded), and mesh their device mesh (nil for one device).
	devices int
	mesh    *distributed.DeviceMesh
	// rt is the timeline of the Trainer that evaluates (nil: each Evaluate records its own), and
	// cur the one of the evaluation under way.
	rt, cur *runTimeline
}

// newEvalProgram returns an evalProgram of m, with the variables of store, on backend.
func newEvalProgram(backend compute.Backend, m *cifarlib.Model, store *model.Store) (*evalProgram, error) {
	if backend == nil || m == nil || store == nil {
		return nil, fmt.Errorf("training: newEvalProgram needs a backend, a model and a store (got %v, %v, %v)", backend != nil, m != nil, store != nil)
	}
	e := &evalProgram{backend: backend, model: m, store: store}
	if m.Spec.NumClasses > 10 && m.NumClasses > 5 {
		e.topK = 5
	}
	if _, err := e.execFor(TTANone); err != nil {
		return nil, err
	}
	return e, nil
}

// graph computes, per example, from the logits averaged over the views of TTA level tta: the
// predicted class, whether the label is in the top k, and the cross-entropy loss (0 for labels
// outside the head).
func (e *evalProgram) graph(scope *model.Scope, images, labels *graph.Node, tta int) (pred, topHit, loss *graph.Node) {
	e.cur.building(runs.ProgramEvaluation, tta)
	g := images.Graph()
	scope.Store().SetTraining(g, false)
	logits := ttaLogits(e.model, scope, images, tta)
	n := logits.Shape().Dimensions[logits.Rank()-1]
	pred = graph.ArgMax(logits, -1, dtypes.Int32)
	k := max(e.topK, 1)
	topHit = topKHits(labels, logits, k)
	lab := graph.ConvertDType(graph.Reshape(labels, labels.Shape().Dimensions[0]), dtypes.Int32)
	oneHot := graph.OneHot(lab, n, logits.DType())
	loss = graph.Neg(graph.ReduceSum(graph.Mul(oneHot, graph.LogSoftmax(logits)), -1))
	return pred, topHit, loss
}

// Evaluate runs the model over recs (in order, without augmentation) and returns the overall
// and per-class results. Cancelling ctx stops it between batches with ctx's error.
func (e *evalProgram) Evaluate(ctx context.Context, recs *data.Records, opts EvalOptions) (*EvalResult, error) {
	if recs == nil || recs.Len() == 0 {
		return nil, fmt.Errorf("training: Evaluate: no examples to evaluate")
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = defaultEvalBatchSize
	}
	if opts.Split == "" {
		opts.Split = "test"
	}
	if opts.purpose == "" {
		opts.purpose = runs.PhaseEval
	}
	if err := checkTTA(opts.TTA); err != nil {
		return nil, err
	}
	e.cur = e.rt
	if e.cur == nil {
		e.cur = newRunTimeline(opts.TimelineFrom)
		e.cur.onEvent, e.cur.backend = opts.OnEvent, e.backend
	}
	began := time.Now()
	if err := e.useDevices(opts.Devices); err != nil {
		return nil, err
	}
	if opts.MaxExamples > 0 && opts.MaxExamples < recs.Len() {
		recs = recsPrefix(recs, opts.MaxExamples)
	}
	ds, err := data.NewDataset("eval-"+opts.Split, recs, data.DatasetOptions{BatchSize: opts.BatchSize, Epochs: 1})
	if err != nil {
		return nil, err
	}
	tally := newEvalTally(recs.Spec, opts.Split, e.model.NumClasses, e.topK)
	tally.progress = Event{Kind: EventEval, Examples: recs.Len(), TTA: opts.TTA, Purpose: opts.purpose, Split: opts.Split}
	e.cur.event(tally.progress)
	if err := backends.TrainCatch(func() error { return e.run(ctx, ds, tally, opts) }); err != nil {
		return nil, backends.TranslateRunError(err, opts.BatchSize)
	}
	res, err := tally.result()
	if err != nil {
		return nil, err
	}
	res.DataKind, res.TTA = recs.Kind, opts.TTA
	e.cur.add(opts.purpose, began).Count = res.Examples
	if e.rt == nil {
		res.Timeline = e.cur.tl
	}
	return res, nil
}

// run evaluates the batches of ds into tally.
func (e *evalProgram) run(ctx context.Context, ds *data.Dataset, tally *evalTally, opts EvalOptions) error {
	for batch, err := range ds.Iter() {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			_ = batch.Finalize()
			return err
		}
		labels, err := tensors.CopyFlatData[int32](batch.Labels[0])
		if err != nil {
			return err
		}
		outs, err := e.call(batch.Inputs[0], batch.Labels[0], opts)
		_ = batch.Finalize()
		if err != nil {
			return err
		}
		preds := tensors.MustCopyFlatData[int32](outs[0])
		top := tensors.MustCopyFlatData[float32](outs[1])
		losses := tensors.MustCopyFlatData[float32](outs[2])
		for _, o := range outs {
			_ = o.FinalizeAll()
		}
		tally.add(labels, preds, top, losses)
		tally.progress.Done = tally.res.Examples
		e.cur.event(tally.progress)
	}
	return nil
}

// evalTally adds up an evaluation, batch by batch.
type evalTally struct {
	// progress is the evaluation's EventEval, Done counting the examples added.
	progress                 Event
	res                      *EvalResult
	classes, head            int
	lossSum                  float64
	lossCount, hits, topHits int
}

// newEvalTally starts the evaluation of a model with a head of head outputs on the split of spec.
func newEvalTally(spec data.Spec, split string, head, topK int) *evalTally {
	res := &EvalResult{Dataset: spec.ID(), Split: split, HeadWidth: head, TopK: topK,
		PerClass: make([]ClassAccuracy, spec.NumClasses), Confusion: make([][]int, spec.NumClasses)}
	for c := range res.PerClass {
		res.PerClass[c] = ClassAccuracy{Label: c, Name: spec.ClassName(c)}
		res.Confusion[c] = make([]int, head)
	}
	return &evalTally{res: res, classes: spec.NumClasses, head: head}
}

// add counts one batch: its labels and the model's predictions, top-k hits and losses (the
// outputs past the labels, padding, are ignored).
func (t *evalTally) add(labels, preds []int32, top, losses []float32) {
	res := t.res
	for i, l := range labels {
		res.Examples++
		p := int(preds[i])
		if l >= 0 && int(l) < t.head {
			t.lossSum += float64(losses[i])
			t.lossCount++
		} else {
			res.OutOfRange++
		}
		if top[i] > 0 {
			t.topHits++
		}
		if int(l) >= 0 && int(l) < t.classes {
			pc := &res.PerClass[l]
			pc.Examples++
			if p >= 0 && p < t.head {
				res.Confusion[l][p]++
			}
			if p == int(l) {
				pc.Correct++
			}
		}
		if p == int(l) {
			t.hits++
		}
	}
}

// result returns the evaluation: accuracies and the mean loss.
func (t *evalTally) result() (*EvalResult, error) {
	res := t.res
	if res.Examples == 0 {
		return nil, fmt.Errorf("training: Evaluate: the dataset yielded no batches")
	}
	res.Accuracy = float64(t.hits) / float64(res.Examples)
	if res.TopK > 0 {
		res.TopKAccuracy = float64(t.topHits) / float64(res.Examples)
	}
	if t.lossCount > 0 {
		res.Loss = t.lossSum / float64(t.lossCount)
	} else {
		res.Loss = math.NaN()
	}
	for c := range res.PerClass {
		if pc := &res.PerClass[c]; pc.Examples > 0 {
			pc.Accuracy = float64(pc.Correct) / float64(pc.Examples)
		}
	}
	return res, nil
}

// Evaluate evaluates m, with the variables in store, on recs. See evalProgram.Evaluate.
func Evaluate(ctx context.Context, backend compute.Backend, m *cifarlib.Model, store *model.Store, recs *data.Records, opts EvalOptions) (*EvalResult, error) {
	e, err := newEvalProgram(backend, m, store)
	if err != nil {
		return nil, err
	}
	return e.Evaluate(ctx, recs, opts)
}

// recsPrefix returns the first n records of r (sharing memory).
func recsPrefix(r *data.Records, n int) *data.Records {
	c := *r
	c.Pixels = r.Pixels[:n*data.ImageBytes]
	c.RawLabels = r.RawLabels[:n*r.Spec.LabelBytes]
	return &c
}

// Worst returns the n classes with the lowest accuracy (ties by label), for reports.
func (r *EvalResult) worst(n int) []ClassAccuracy {
	cs := append([]ClassAccuracy(nil), r.PerClass...)
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Accuracy < cs[j].Accuracy })
	return cs[:min(n, len(cs))]
}

// Summary returns a one-line summary, e.g.
// "test accuracy 71.20% (7120/10000), loss 0.8123, top-5 92.10% [real cifar100, verified, head 100]", or
// "test accuracy 94.01% (9401/10000), loss 0.4210, test-time augmentation mirror+translate
// [real cifar10, verified, head 10]" with EvalOptions.TTA; the data as data.Caption says it, in
// capitals when synthetic ("[SYNTHETIC cifar10 (generated images, not real accuracy), head 10]"),
// the dataset alone when DataKind is not known.
func (r *EvalResult) Summary() string {
	var b strings.Builder
	hits := int(math.Round(r.Accuracy * float64(r.Examples)))
	fmt.Fprintf(&b, "%s accuracy %.2f%% (%d/%d), loss %.4f", r.Split, 100*r.Accuracy, hits, r.Examples, r.Loss)
	if r.TopK > 0 {
		fmt.Fprintf(&b, ", top-%d %.2f%%", r.TopK, 100*r.TopKAccuracy)
	}
	if r.TTA != TTANone {
		fmt.Fprintf(&b, ", test-time augmentation %s", ttaName(r.TTA))
	}
	what := r.Dataset
	if r.DataKind != "" {
		what = data.Caption(r.Dataset, r.DataKind)
	}
	fmt.Fprintf(&b, " [%s, head %d]", what, r.HeadWidth)
	if r.OutOfRange > 0 {
		fmt.Fprintf(&b, "; %d of %d examples (%.1f%%) have labels outside the head's %d outputs and can never be predicted",
			r.OutOfRange, r.Examples, 100*float64(r.OutOfRange)/float64(r.Examples), r.HeadWidth)
	}
	return b.String()
}

// WriteReport writes the summary and the per-class accuracy table to w.
func (r *EvalResult) WriteReport(w io.Writer) error {
	if _, err := fmt.Fprintln(w, r.Summary()); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "%5s  %-30s %8s %8s %9s\n", "label", "class", "correct", "examples", "accuracy"); err != nil {
		return err
	}
	for _, c := range r.PerClass {
		if _, err := fmt.Fprintf(w, "%5d  %-30s %8d %8d %8.2f%%\n", c.Label, c.Name, c.Correct, c.Examples, 100*c.Accuracy); err != nil {
			return err
		}
	}
	return nil
}

// HTML returns the summary and the per-class accuracy table as an HTML fragment, for a
// notebook cell (nb.Show displays it): the worst classes first, each with the class its
// examples were most often taken for, and only the 10 worst when there are more than 20
// classes (WriteReport keeps every class, in label order).
func (r *EvalResult) HTML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "<p>%s</p>\n<table>\n<tr><th>label</th><th>class</th><th>correct</th><th>examples</th><th>accuracy</th>"+
		"<th>most often taken for</th></tr>\n", html.EscapeString(r.Summary()))
	sorted := r.worst(len(r.PerClass)) // worst first
	worst := sorted
	if len(sorted) > htmlAllClasses {
		worst = sorted[:htmlWorstClasses]
	}
	for _, c := range worst {
		fmt.Fprintf(&b, "<tr><td>%d</td><td>%s</td><td>%d</td><td>%d</td><td>%.2f%%</td><td>%s</td></tr>\n",
			c.Label, html.EscapeString(c.Name), c.Correct, c.Examples, 100*c.Accuracy, html.EscapeString(r.confusedWith(c.Label)))
	}
	b.WriteString("</table>\n")
	if rest := sorted[len(worst):]; len(rest) > 0 {
		fmt.Fprintf(&b, "<p>The %d worst of %d classes; the other %d have %.2f%% to %.2f%% (WriteReport lists them all).</p>\n",
			len(worst), len(sorted), len(rest), 100*rest[0].Accuracy, 100*rest[len(rest)-1].Accuracy)
	}
	return b.String()
}

// The HTML table lists every class up to htmlAllClasses of them, else the htmlWorstClasses
// worst: a user looks at the worst classes first.
const (
	htmlAllClasses   = 20
	htmlWorstClasses = 10
)

// confusedWith names the prediction the examples of label most often got instead of label,
// with their count, e.g. "truck (12)"; "" when none was misclassified.
func (r *EvalResult) confusedWith(label int) string {
	best, count := -1, 0
	for p, n := range r.Confusion[label] {
		if p != label && n > count {
			best, count = p, n
		}
	}
	if best < 0 {
		return ""
	}
	name := fmt.Sprint(best)
	if best < len(r.PerClass) {
		name = r.PerClass[best].Name
	}
	return fmt.Sprintf("%s (%d)", name, count)
}
