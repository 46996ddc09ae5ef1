package training

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/internal/tfevents"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// ZeroLossStats counts the training examples whose label lies outside the classifier head,
// [0, HeadWidth). GoMLX's plain sparse cross-entropy one-hots such a label into an all-zero row:
// the example contributes exactly zero loss and zero gradient, but still counts in the batch
// mean. With the guards on (the default) there are none: training stops at the first such label.
type ZeroLossStats struct {
	// HeadWidth is the number of logits.
	HeadWidth int `json:"head_width"`
	// Seen is the number of training examples fed to the steps of this run (resumed runs count
	// from the resume), and OutOfRange how many of them had a label outside the head.
	Seen       int64 `json:"seen"`
	OutOfRange int64 `json:"out_of_range"`
	// SplitExamples is the size of the training split and SplitOutOfRange how many of its
	// examples have a label outside the head.
	SplitExamples   int `json:"split_examples"`
	SplitOutOfRange int `json:"split_out_of_range"`
}

// Fraction is OutOfRange/Seen: the share of the training examples seen that contributed
// exactly zero loss (0 when none were seen).
func (z ZeroLossStats) fraction() float64 {
	if z.Seen == 0 {
		return 0
	}
	return float64(z.OutOfRange) / float64(z.Seen)
}

// String says it in words, e.g. "28800 of 32000 training examples seen (90.0%) had labels
// outside the head's 10 outputs and contributed exactly zero loss (training split: 45000 of
// 50000, 90.0%)".
func (z ZeroLossStats) String() string {
	split := 0.0
	if z.SplitExamples > 0 {
		split = float64(z.SplitOutOfRange) / float64(z.SplitExamples)
	}
	return fmt.Sprintf("%d of %d training examples seen (%.1f%%) had labels outside the head's %d outputs and "+
		"contributed exactly zero loss (training split: %d of %d, %.1f%%)",
		z.OutOfRange, z.Seen, 100*z.fraction(), z.HeadWidth, z.SplitOutOfRange, z.SplitExamples, 100*split)
}

// Result is the outcome of Train or Trainer.Run.
type Result struct {
	// Dataset is the dataset id, Model the architecture and HeadWidth its number of logits.
	Dataset   string `json:"dataset"`
	Model     string `json:"model"`
	HeadWidth int    `json:"head_width"`
	// Guarded is false when the run used GoMLX's plain loss without guards.
	Guarded bool `json:"guarded"`
	// Backend describes the compute backend.
	Backend string `json:"backend"`
	// Precision is what the convolutions and matrix products computed in (Settings.Compute.Precision).
	Precision cifarlib.Precision `json:"precision"`
	// Devices is the number of devices each batch was sharded across (Settings.Compute.Devices).
	Devices int `json:"devices"`
	// BatchSize is the number of images per step (the global batch, across all devices).
	BatchSize int `json:"batch_size"`
	// Data is what the run was trained on: synthetic or real, layout, folder, images per split.
	Data data.Provenance `json:"data"`

	// StartStep is the global step the run started from (non-zero when resumed), EndStep the
	// global step reached, TargetStep the one asked for (Settings.Run.Steps).
	StartStep  int `json:"start_step"`
	EndStep    int `json:"end_step"`
	TargetStep int `json:"target_step"`
	// Resumed is true when the run continued from a checkpoint.
	Resumed bool `json:"resumed"`
	// Interrupted is true when the context was cancelled (e.g. SIGINT) before TargetStep; the
	// checkpoint, if configured, holds EndStep and a new run with the same config resumes there.
	Interrupted bool `json:"interrupted"`
	// CheckpointDir is where checkpoints were saved ("" when not configured).
	CheckpointDir string `json:"checkpoint_dir,omitempty"`
	// Transfer says what a transferred run (Settings.Transfer.From) carried from its source and what
	// it initialised afresh; nil for a run trained from scratch.
	Transfer *TransferReport `json:"transfer,omitempty"`
	// Recipe is the named recipe the run's settings came from (Settings.Recipe), "" for none;
	// RecipeSettings says what it resolved to, in one line (DescribeRecipe's), for the summary;
	// it travels with the Result (the lab process sends it back to the cell as JSON).
	Recipe         string `json:"recipe,omitempty"`
	RecipeSettings string `json:"recipe_settings,omitempty"`
	// Warnings say what made the run learn nothing though it trained (Trainer.Warnings: e.g. a
	// run shorter than the lookahead's period); the summary says each.
	Warnings []string `json:"warnings,omitempty"`

	// Loss is the last batch loss, MovingLoss its moving average; Accuracy and TopK are the
	// moving averages of the training accuracy and top-5 accuracy (CIFAR-100).
	Loss       float64 `json:"loss"`
	MovingLoss float64 `json:"moving_loss"`
	Accuracy   float64 `json:"train_accuracy"`
	TopK       float64 `json:"train_top_k,omitempty"`
	// TrainMetricsFrom is the step those moving averages count from: 0, as a resumed run carries
	// them over from its checkpoint; the step it resumed at when the checkpoint did not record
	// them (one written before they were recorded), which the summary then says.
	TrainMetricsFrom int `json:"train_metrics_from,omitempty"`

	// ZeroLoss counts the examples whose label is outside the head (exactly zero loss).
	ZeroLoss ZeroLossStats `json:"zero_loss"`

	// Duration is the wall time of the training steps of this run (graph compilation included);
	// StepsPerSecond and ImagesPerSecond exclude the first step, which compiles the graph.
	Duration        time.Duration `json:"duration_ns"`
	StepsPerSecond  float64       `json:"steps_per_second"`
	ImagesPerSecond float64       `json:"images_per_second"`

	// Timeline is where the run's wall time went, from the start of its process: the backend,
	// the data, each compile, the steps, the evaluations and the checkpoint writes.
	Timeline *runs.Timeline `json:"timeline,omitempty"`

	// Eval is the final evaluation on the test split (nil if skipped or interrupted).
	Eval *EvalResult `json:"eval,omitempty"`
	// History holds the curves of the whole run, including the part before a resume.
	History *runs.History `json:"-"`

	// Trained is the trained model with its weights, for what comes after training: its
	// Logits, Losses and Evaluate methods are promoted (res.Logits(images)).
	*Trained `json:"-"`
}

// trainMetrics says the last step's loss and the moving averages of the training metrics, and
// what steps they cover when not the whole run's (TrainMetricsFrom).
func (r *Result) trainMetrics() string {
	s := fmt.Sprintf("loss %.4f (moving average %.4f), train accuracy %.2f%%", r.Loss, r.MovingLoss, 100*r.Accuracy)
	if r.TopK > 0 {
		s += fmt.Sprintf(", train top-5 %.2f%%", 100*r.TopK)
	}
	if r.TrainMetricsFrom > 0 {
		s += fmt.Sprintf(" (moving averages of the steps since the resume at step %d: its checkpoint did not record them)", r.TrainMetricsFrom)
	}
	return s
}

// StepsRun is the number of steps this run trained.
func (r *Result) StepsRun() int { return r.EndStep - r.StartStep }

// Source says where the run's numbers come from, its data and machine, as its charts' caption
// says it.
func (r *Result) Source() runs.Source {
	return runs.Source{Data: &r.Data, Backend: r.Backend, Devices: r.Devices, Precision: r.Precision}
}

// EpochTime is the time one epoch of the training split takes at the run's steady pace: the
// time per step of the steps after the first (the timeline's PhaseSteps: no compilation, no
// first step, no evaluations or checkpoints), times the steps of an epoch (Data.TrainImages /
// BatchSize: the last partial batch is dropped, as Train drops it). 0 when the run has no
// such steps (a single step, or no timeline).
func (r *Result) EpochTime() time.Duration {
	if r.Timeline == nil || r.BatchSize <= 0 {
		return 0
	}
	d, n := r.Timeline.Total(runs.PhaseSteps)
	if n == 0 {
		return 0
	}
	return d / time.Duration(n) * time.Duration(r.Data.TrainImages/r.BatchSize)
}

// WriteSummary writes a human-readable summary of the run to w.
func (r *Result) WriteSummary(w io.Writer) error {
	var b strings.Builder
	guard := "guarded loss"
	if !r.Guarded {
		guard = "UNGUARDED plain loss"
	}
	fmt.Fprintf(&b, "trained %s (head %d) on %s with %s, backend %s, precision %s, batch %d", r.Model, r.HeadWidth, r.Dataset, guard,
		r.Backend, r.Precision, r.BatchSize)
	if r.Devices > 1 {
		fmt.Fprintf(&b, " sharded across %d devices (%d per device)", r.Devices, r.BatchSize/r.Devices)
	}
	b.WriteString("\n")
	if r.Data.Dataset != "" {
		fmt.Fprintf(&b, "data: %s\n", r.Data)
	}
	if r.Transfer != nil {
		b.WriteString(r.Transfer.String())
	}
	if r.Recipe != "" && r.RecipeSettings != "" {
		fmt.Fprintf(&b, "recipe %s: %s\n", r.Recipe, r.RecipeSettings)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "WARNING: %s\n", w)
	}
	switch {
	case r.Interrupted:
		fmt.Fprintf(&b, "interrupted at step %d of %d (started at %d)", r.EndStep, r.TargetStep, r.StartStep)
		if r.CheckpointDir != "" {
			fmt.Fprintf(&b, "; checkpoint saved in %s: run the same command again to resume", r.CheckpointDir)
		}
		b.WriteString("\n")
	case r.Resumed:
		fmt.Fprintf(&b, "resumed at step %d, trained to step %d\n", r.StartStep, r.EndStep)
	default:
		fmt.Fprintf(&b, "steps: %d\n", r.EndStep)
	}
	if r.StepsRun() > 0 {
		b.WriteString(r.trainMetrics())
		fmt.Fprintf(&b, "\nspeed: %.2f steps/s, %.1f images/s (%s for %d steps)\n", r.StepsPerSecond, r.ImagesPerSecond,
			r.Duration.Round(time.Millisecond), r.StepsRun())
		fmt.Fprintf(&b, "zero-loss examples: %s\n", r.ZeroLoss)
		if r.ZeroLoss.OutOfRange > 0 {
			fmt.Fprintf(&b, "WARNING: %.1f%% of the training examples taught the model nothing: the head has %d outputs "+
				"but the labels need %s's classes; rebuild the model for the dataset (Model.Head 0, the setting head=0) and keep the guard on\n",
				100*r.ZeroLoss.fraction(), r.HeadWidth, r.Dataset)
		}
	}
	if r.Eval != nil {
		b.WriteString(r.Eval.Summary())
		b.WriteString("\n")
	}
	if r.Timeline != nil {
		fmt.Fprintf(&b, "timeline: %s\n", r.Timeline)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Trained is a model together with its weights on a backend: what Train returns (embedded in
// Result) and LoadCheckpoint loads (embedded in LoadedCheckpoint), so that later code, or
// a later notebook cell, computes with the trained model in one call.
type Trained struct {
	// Model is the architecture and head.
	Model *cifarlib.Model
	// Store holds the trained variables.
	Store *model.Store
	// Backend is where they live and where Logits, Losses and Evaluate run.
	Backend compute.Backend
	// EvaluateWith, when set, evaluates in Evaluate's place: package nb sets it so that a
	// notebook's lab process evaluates the run, with the backend, data and compiled programs it
	// keeps from cell to cell.
	EvaluateWith func(ctx context.Context, recs *data.Records, opts EvalOptions) (*EvalResult, error)

	// evaluator is the Trainer's, whose evaluation program is compiled (nil: Evaluate makes one).
	evaluator *evalProgram
}

// Logits runs the trained model on images (float32 [n, 32, 32, 3]) and returns the logits
// [n, HeadWidth]: PyTorch's `model(x)`.
func (t *Trained) Logits(images *tensors.Tensor) (*tensors.Tensor, error) {
	return t.Model.Logits(t.Backend, t.Store, images)
}

// Losses returns the loss of every example of b under GoMLX's plain loss, and what the guarded
// loss makes of the same batch (see ExampleLosses).
func (t *Trained) Losses(b *data.Batch) (*cifarlib.ExampleLosses, error) {
	return t.Model.Losses(t.Backend, t.Store, b)
}

// Evaluate evaluates the trained model on recs (accuracy, loss, per-class accuracy). The model
// of a Result evaluates with the evaluation program its run compiled (for the same batch size,
// nothing is compiled again).
func (t *Trained) Evaluate(ctx context.Context, recs *data.Records, opts EvalOptions) (*EvalResult, error) {
	if t.EvaluateWith != nil {
		return t.EvaluateWith(ctx, recs, opts)
	}
	if e := t.evaluator; e != nil && e.store == t.Store {
		e.rt = nil // a timeline of its own
		return e.Evaluate(ctx, recs, opts)
	}
	return Evaluate(ctx, t.Backend, t.Model, t.Store, recs, opts)
}

// TensorBoard tags of the scalars a run writes into its folder (see runFolder.point).
const (
	tagTrainLoss     = "train/loss"          // the batch loss (HistoryPoint.Loss)
	tagTrainAccuracy = "train/accuracy"      // HistoryPoint.BatchAccuracy (TensorBoard smooths it like the loss)
	tagTrainTopK     = "train/top5"          // HistoryPoint.TopK (CIFAR-100)
	tagLearningRate  = "train/learning_rate" // HistoryPoint.LearningRate
	tagTestLoss      = "test/loss"           // HistoryPoint.Eval.Loss (Settings.Eval.Every)
	tagTestAccuracy  = "test/accuracy"       // HistoryPoint.Eval.Accuracy
	tagTestTopK      = "test/top5"           // HistoryPoint.Eval.TopK
	tagFinalLoss     = "final/test_loss"     // TrainResult.Eval.Loss, at the last step
	tagFinalAccuracy = "final/test_accuracy" // TrainResult.Eval.Accuracy
	tagFinalTopK     = "final/test_top5"     // TrainResult.Eval.TopKAccuracy
	tagData          = "data"                // text: Result.Data, what the run was trained on
)

// createEvents starts a run's TensorBoard event file (a variable for the test of a failing one).
var createEvents = tfevents.Create

// runFolder is what a Trainer with a Checkpoint.Dir writes besides the checkpoints: run.json
// (runs.Record) when it starts and ends, and TensorBoard scalars as the History points come.
// A TensorBoard write error does not stop training: it is logged once and the events stop.
type runFolder struct {
	dir     string
	record  *runs.Record
	opened  time.Time
	prior   time.Duration // WallTime of the runs before a resume
	events  *tfevents.Writer
	log     io.Writer
	evtErr  error
	topK    bool
	lastErr error
}

// openRunFolder records the start of a run of t in its checkpoint directory and opens a new
// TensorBoard event file there, starting at the step after start (a resume supersedes the
// points a crashed run wrote past its checkpoint). It returns nil without a checkpoint
// directory.
func (t *Trainer) openRunFolder(start int) *runFolder {
	if t.ckpt == nil {
		return nil
	}
	cfg := t.plan
	rf := &runFolder{dir: cfg.Checkpoint.Dir, opened: time.Now(), log: t.env.Log, topK: cfg.TopK() > 0,
		record: newRunRecord(cfg, t.model.NumClasses, t.devices.numDevices())}
	provenance := t.records.provenance
	rf.record.Data = &provenance
	rf.record.Timeline = t.rt.tl // filled in as the run goes
	if start > 0 {               // a resume: the record of the runs before it
		if prev, err := runs.ReadRecord(rf.dir); err == nil {
			rf.prior = prev.WallTime
			if from, _ := prev.Settings.Value("from"); from != "" && cfg.Transfer.From == "" {
				rf.record.Settings.Set("from", from) // a resumed transfer is still one
			}
			rf.record.Job.Resumed(prev.Job)
		}
	}
	rf.record.ImportedFrom = t.importedFrom(start)
	rf.note(rf.record.Write(rf.dir))
	if rf.events, rf.evtErr = createEvents(rf.dir); rf.evtErr == nil {
		rf.evtErr = rf.events.Start(int64(start + 1))
	}
	if rf.evtErr == nil && len(cfg.Record.Params) > 0 { // TensorBoard's HParams dashboard
		rf.evtErr = rf.events.HParams(cfg.Record.Params, rf.record.Started)
	}
	if rf.evtErr == nil { // TensorBoard's TEXT tab says what each run was trained on
		rf.evtErr = rf.events.Text(int64(start+1), tagData, provenance.String())
	}
	rf.note(rf.evtErr)
	return rf
}

// point writes a History point's scalars to TensorBoard.
func (rf *runFolder) point(p runs.HistoryPoint) {
	if rf == nil {
		return
	}
	accuracy := p.Accuracy
	if p.BatchAccuracy != nil {
		accuracy = *p.BatchAccuracy
	}
	values := []tfevents.Scalar{{Tag: tagTrainLoss, Value: float32(p.Loss)}, {Tag: tagTrainAccuracy, Value: float32(accuracy)}}
	if rf.topK {
		values = append(values, tfevents.Scalar{Tag: tagTrainTopK, Value: float32(p.TopK)})
	}
	values = append(values, tfevents.Scalar{Tag: tagLearningRate, Value: float32(p.LearningRate)})
	if e := p.Eval; e != nil {
		values = append(values, tfevents.Scalar{Tag: tagTestLoss, Value: float32(e.Loss)}, tfevents.Scalar{Tag: tagTestAccuracy, Value: float32(e.Accuracy)})
		if rf.topK {
			values = append(values, tfevents.Scalar{Tag: tagTestTopK, Value: float32(e.TopK)})
		}
	}
	rf.scalars(int64(p.Step), values)
}

func (rf *runFolder) scalars(step int64, values []tfevents.Scalar) {
	if rf.evtErr != nil {
		return
	}
	rf.eventErr(rf.events.Scalars(step, values...))
}

// eventErr records the result of an event write.
func (rf *runFolder) eventErr(err error) {
	rf.evtErr = err
	rf.note(err)
}

// close records how the run ended: res when it ended without error, else runErr.
func (rf *runFolder) close(res *Result, runErr error) {
	if rf == nil {
		return
	}
	if runErr == nil && res != nil && res.Eval != nil {
		values := []tfevents.Scalar{{Tag: tagFinalLoss, Value: float32(res.Eval.Loss)}, {Tag: tagFinalAccuracy, Value: float32(res.Eval.Accuracy)}}
		if rf.topK {
			values = append(values, tfevents.Scalar{Tag: tagFinalTopK, Value: float32(res.Eval.TopKAccuracy)})
		}
		rf.scalars(int64(res.EndStep), values)
	}
	if rf.evtErr == nil && len(rf.record.Settings.Given) > 0 && (runErr != nil || !res.Interrupted) { // an interrupted run goes on later
		status := tfevents.StatusSuccess
		if runErr != nil {
			status = tfevents.StatusFailure
		}
		rf.eventErr(rf.events.HParamsEnd(status, time.Now()))
	}
	if rf.events != nil {
		if err := rf.events.Close(); rf.evtErr == nil {
			rf.evtErr = err
			rf.note(err)
		}
	}
	rec := rf.record
	if rf.evtErr != nil {
		rec.Warning = rf.evtErr.Error()
	}
	rec.Ended = time.Now()
	rec.WallTime = rf.prior + rec.Ended.Sub(rf.opened)
	switch {
	case runErr != nil:
		rec.Status, rec.Error = runs.RunFailed, runErr.Error()
	case res.Interrupted:
		rec.Status = runs.RunInterrupted
	default:
		rec.Status = runs.RunDone
	}
	if runErr == nil {
		result, err := json.Marshal(res)
		rf.note(err)
		rec.Result = result
	}
	rf.note(rec.Write(rf.dir))
}

// note logs an error of the run folder once per distinct error; training goes on. The first
// TensorBoard error is also recorded in run.json (runs.Record.Warning).
func (rf *runFolder) note(err error) {
	if err == nil || rf.log == nil || (rf.lastErr != nil && errors.Is(err, rf.lastErr)) {
		return
	}
	rf.lastErr = err
	fmt.Fprintf(rf.log, "note: %v (training goes on)\n", err)
}

// newRunRecord is the record of a run of plan p starting now, with its settings as it resolved
// them: its plan's, with the head's width and the devices' count it trains with.
func newRunRecord(p *plan, head, devices int) *runs.Record {
	s := p.Settings
	s.Model.Head, s.Compute.Devices = head, devices
	return &runs.Record{Status: runs.RunRunning, Started: time.Now(), Settings: runSettings(&s), Job: runs.CurrentJob()}
}

// RecordFailedStart records, in settings.Checkpoint.Dir, a run that failed before its first
// step with runErr (e.g. *cifarlib.HeadMismatchError from Train), so that runs.List shows the
// attempt and its error: the notebooks' Lab.Fit does, for its named runs. It writes only into a
// new or empty folder, so a folder holding an earlier run keeps that run's record; settings
// errors (*ConfigError) and settings without a checkpoint directory record nothing. A run whose
// length is in epochs records its target step when env gives its training split.
func RecordFailedStart(settings Settings, env Env, runErr error) error {
	var ce *ConfigError
	dir := settings.Checkpoint.Dir
	if dir == "" || runErr == nil || errors.As(runErr, &ce) || settings.Validate() != nil {
		return nil
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 || err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	p, err := resolve(settings, nil) // its settings only: the transfer source may be what failed
	if err != nil {
		return nil
	}
	if env.Train != nil {
		_ = p.count(env.Train.Len())
	}
	rec := newRunRecord(p, p.Model.Head, max(1, p.Compute.Devices))
	rec.Status, rec.Error, rec.Ended = runs.RunFailed, runErr.Error(), time.Now()
	return rec.Write(dir)
}

// runSettings are the settings s as run.json records them (runs.Record.Settings), once: every
// row of the table, in its order, with its Label, value and part (Bookkeeping), and what was
// given (Record.Params, the one field of Settings no row has).
func runSettings(s *Settings) runs.RunSettings {
	values := make([]runs.Setting, 0, len(fields))
	for _, f := range fields {
		values = append(values, runs.Setting{Name: f.Name, Words: f.Label, Value: f.Get(s), Bookkeeping: f.Bookkeeping})
	}
	return runs.RunSettings{Values: values, Given: s.Record.Params}
}
