package training

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/cifarlab/cifarlab/internal/tfevents"
)

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
