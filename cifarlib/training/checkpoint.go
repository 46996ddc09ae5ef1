package training

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/checkpoint"
)

// CheckpointMismatchError reports a resume whose settings differ from those of the run that
// saved the checkpoint: continuing would not be the same training (or would not even load).
type CheckpointMismatchError struct {
	// Dir is the checkpoint directory.
	Dir string
	// Diffs lists each differing setting as "name: saved X, requested Y".
	Diffs []string
}

// Error implements error, listing every differing setting.
func (e *CheckpointMismatchError) Error() string {
	return fmt.Sprintf("training: checkpoint %s was saved by a run with different settings (%s): resume with the "+
		"same settings, or use a new checkpoint directory", e.Dir, strings.Join(e.Diffs, "; "))
}

// trainCheckpoint is the checkpoint side of a Trainer: GoMLX's checkpoint.Handler plus the
// History file next to it.
type trainCheckpoint struct {
	handler *checkpoint.Handler
	dir     string
	// resumed is set when the directory held a checkpoint, with what it recorded.
	resumed *CheckpointInfo
	// imported is set instead when that checkpoint has no training settings (an imported
	// run's): training continues from its weights with the run's own settings.
	imported *CheckpointInfo
	// setAside lists the incomplete checkpoints (interrupted saves) moved out of the way.
	setAside []string
}

// openCheckpoints is the checkpointing part of a Trainer for plan p and its model m: it
// creates (or resumes from) the checkpoint directory, loading a checkpoint's variables and
// History, gives m the input normalisation its weights expect (adoptInput), and records the
// run's settings in store's parameters (replacing those a resumed checkpoint loaded), which
// every checkpoint saves. Without a checkpoint directory the run has no checkpoints (nil) and a
// fresh History.
func openCheckpoints(p *plan, m *cifarlib.Model, store *model.Store, log runLog) (*trainCheckpoint, *runs.History, error) {
	history := &runs.History{TopK: p.TopK()}
	var tc *trainCheckpoint
	if p.Checkpoint.Dir != "" {
		var err error
		if tc, err = openTrainCheckpoint(store, p); err != nil {
			return nil, nil, err
		}
	}
	m.Input = tc.adoptInput(p, m.Input)
	if err := recordSettings(p, store, m.Input); err != nil {
		return nil, nil, err
	}
	if tc == nil {
		return nil, history, nil
	}
	for _, name := range tc.setAside {
		log("checkpoint %s in %s was incomplete (an interrupted save): set aside as %s.{json,bin}%s",
			name, p.Checkpoint.Dir, name, incompleteCheckpointSuffix)
	}
	if tc.resumed != nil {
		var err error
		if history, err = runs.LoadHistory(p.Checkpoint.Dir); err != nil {
			return nil, nil, err
		}
		history.TopK = p.TopK()
	}
	tc.noteImported(p, log)
	return tc, history, nil
}

// recordSettings records the settings of a run of plan p, whose model expects input, in
// store's parameters (replacing those a resumed checkpoint loaded), which every checkpoint saves.
func recordSettings(p *plan, store *model.Store, input cifarlib.InputNormalization) error {
	info := CheckpointInfo{Dir: p.Checkpoint.Dir, Format: SettingsFormat, Settings: p.Settings, Input: input}
	return info.setStoreParams(store)
}

// adoptInput returns the input normalisation the weights of a run of plan p expect: a resumed
// or imported run's recorded one (tc nil: none), or a transfer source's. Runs that record none
// keep own, their dataset's.
func (tc *trainCheckpoint) adoptInput(p *plan, own cifarlib.InputNormalization) cifarlib.InputNormalization {
	switch {
	case tc != nil && tc.resumed != nil:
		return tc.resumed.Input
	case tc != nil && tc.imported != nil:
		return tc.imported.Input
	case p.source != nil:
		return p.source.info.Input
	}
	return own
}

// openTrainCheckpoint creates (or loads) the checkpoint directory of plan p into store, before
// any of the run's parameters are set: a loaded checkpoint must match p's settings.
func openTrainCheckpoint(store *model.Store, p *plan) (*trainCheckpoint, error) {
	dir := p.Checkpoint.Dir
	setAside, err := setAsideIncompleteCheckpoints(dir)
	if err != nil {
		return nil, err
	}
	h, err := checkpoint.Build(store).Dir(dir).Keep(p.Checkpoint.Keep).Done()
	if err != nil {
		return nil, fmt.Errorf("training: checkpoint directory %s: %w", dir, err)
	}
	tc := &trainCheckpoint{handler: h, dir: dir, setAside: setAside}
	has, err := h.HasCheckpoints()
	if err != nil {
		return nil, fmt.Errorf("training: checkpoint directory %s: %w", dir, err)
	}
	if !has {
		return tc, nil
	}
	info, ok, err := checkpointInfoFromStore(store, dir)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("training: %s holds a GoMLX checkpoint that cifarlib did not write (no %q parameter): "+
			"use another checkpoint directory", dir, ckptParamModel)
	}
	if info.Input, err = inputFromStore(store); err != nil {
		return nil, err
	}
	diffs := info.compareForResume(&p.Settings)
	// A different head is a *ShapeMismatchError, which says more than the settings' diff.
	if err := headShapeCheck(h, info, p.dataset, p.Model.Head, p.Model.Arch, true); err != nil {
		return nil, err
	}
	if info.hasNoTrainingSettings() { // an import: nothing to resume but its weights
		if err := info.checkTrainOn(&p.Settings); err != nil {
			return nil, err
		}
		tc.imported = &info
		return tc, nil
	}
	if len(diffs) > 0 {
		return nil, &CheckpointMismatchError{Dir: dir, Diffs: diffs}
	}
	tc.resumed = &info
	return tc, nil
}

// isImport reports whether the run continues an imported run's weights (tc nil: no checkpoints).
func (tc *trainCheckpoint) isImport() bool { return tc != nil && tc.imported != nil }

// resumedAt returns the step the run resumed from, and whether it resumed (false for a fresh
// run and for a run without checkpoints, tc nil).
func (tc *trainCheckpoint) resumedAt() (step int, ok bool) {
	if tc == nil || tc.resumed == nil {
		return 0, false
	}
	return tc.resumed.Step, true
}

// save writes a new checkpoint (keeping the newest Checkpoint.Keep) and the history.
// Metric accumulators are not saved: GoMLX names them with a fresh id per run; nor are the fed
// hyper-parameters (optimizers.IsFed): each run sets its own.
func (tc *trainCheckpoint) save(store *model.Store, history *runs.History) error {
	for v := range store.IterVariables() {
		if strings.HasPrefix(v.Path(), "/metrics/") || optimizers.IsFed(v) {
			tc.handler.ExcludeVarsFromSaving(v)
		}
	}
	if err := tc.handler.Save(); err != nil {
		return fmt.Errorf("training: saving checkpoint in %s: %w", tc.dir, err)
	}
	return history.Save(tc.dir)
}

// readRunCheckpoint opens the latest checkpoint of the cifarlib run in dir into a new Store
// (its variables loaded lazily, the handler's LoadedVariables holding them until then) and
// returns what the run recorded. Errors: ErrNoCheckpoint (wrapped) for a missing, empty or file
// path, *IncompleteCheckpointError for an interrupted save, *CorruptCheckpointError for files
// GoMLX cannot read, and an error naming the missing parameter for a foreign checkpoint.
func readRunCheckpoint(dir string) (*model.Store, *checkpoint.Handler, CheckpointInfo, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, nil, CheckpointInfo{}, fmt.Errorf("%w in %s: %w", ErrNoCheckpoint, dir, err)
	}
	if !fi.IsDir() {
		return nil, nil, CheckpointInfo{}, fmt.Errorf("%w: %s is a file, not a checkpoint directory", ErrNoCheckpoint, dir)
	}
	if names, reason, err := incompleteCheckpoints(dir); err == nil && len(names) > 0 {
		return nil, nil, CheckpointInfo{}, &IncompleteCheckpointError{Dir: dir, Files: names, Reason: reason}
	}
	store := model.NewStore()
	h, err := checkpoint.Build(store).Dir(dir).Done()
	if err != nil {
		return nil, nil, CheckpointInfo{}, &CorruptCheckpointError{Dir: dir, Err: err}
	}
	if has, err := h.HasCheckpoints(); err != nil || !has {
		return nil, nil, CheckpointInfo{}, fmt.Errorf("%w in %s: train a run with it as its checkpoint folder first (Checkpoint.Dir, the setting checkpoint)", ErrNoCheckpoint, dir)
	}
	info, ok, err := checkpointInfoFromStore(store, dir)
	if err != nil {
		return nil, nil, CheckpointInfo{}, err
	}
	if !ok {
		return nil, nil, CheckpointInfo{}, fmt.Errorf("training: %s holds a GoMLX checkpoint that cifarlib did not write (no %q parameter)", dir, ckptParamModel)
	}
	if info.Input, err = inputFromStore(store); err != nil {
		return nil, nil, CheckpointInfo{}, err
	}
	return store, h, info, nil
}

// headShapeCheck returns *ShapeMismatchError when the checkpoint h (of the run info) holds a
// head whose width differs from head, for a model of the same architecture arch built for the
// dataset with Spec ID dataset; nil otherwise.
func headShapeCheck(h *checkpoint.Handler, info CheckpointInfo, dataset string, head int, arch string, resume bool) error {
	if info.Model.Arch != arch || info.Model.Head == head {
		return nil
	}
	_, headScope := archScopes(arch)
	path := headScope + "dense/weights" // layers.DenseWithBias in the model's "head" scope.
	saved, ok := h.LoadedVariables()["var:"+path]
	if !ok || saved.Shape().Rank() != 2 {
		return nil // The saved head is not there to compare: the settings' diff reports it.
	}
	dims := saved.Shape().Dimensions
	return &ShapeMismatchError{Dir: info.Dir, Variable: path, Saved: []int{dims[0], dims[1]}, Model: []int{dims[0], head},
		SavedDataset: info.Data.Spec.ID(), ModelDataset: dataset, SavedHead: info.Model.Head, ModelHead: head, Resume: resume}
}

// incompleteCheckpointSuffix is appended to the files of a checkpoint that a save left
// incomplete when a resumed run sets them aside.
const incompleteCheckpointSuffix = ".incomplete"

// IncompleteCheckpointError reports that the newest checkpoint in a directory was not completely
// written (GoMLX's checkpoint.Save writes its files in place, and a crash or kill during a save
// leaves an empty or truncated .json): loading it would fail, and resuming from it is impossible.
type IncompleteCheckpointError struct {
	// Dir is the checkpoint directory.
	Dir string
	// Files are the base names (without .json/.bin) of the incomplete checkpoints, newest last.
	Files []string
	// Reason says what is wrong with the newest one.
	Reason string
}

func (e *IncompleteCheckpointError) Error() string {
	return fmt.Sprintf("training: checkpoint %s in %s is incomplete (%s; a save was interrupted): resume "+
		"training with the same checkpoint folder to set it aside and continue from the previous one, "+
		"or delete its .json and .bin files", e.Files[len(e.Files)-1], e.Dir, e.Reason)
}

// incompleteCheckpoints returns the base names of the checkpoints in dir that are newer than
// its newest complete one and incomplete themselves, oldest first, with the reason for the newest.
// A checkpoint is complete when its .json (written last by GoMLX, after the .bin is closed)
// parses and names its variables, and its .bin exists.
func incompleteCheckpoints(dir string) (names []string, reason string, err error) {
	matches, err := filepath.Glob(filepath.Join(dir, "checkpoint-*"+checkpoint.JsonNameSuffix))
	if err != nil {
		return nil, "", err
	}
	sort.Strings(matches) // GoMLX names them checkpoint-nNNNNNNN-..., so this is oldest first
	for i := len(matches) - 1; i >= 0; i-- {
		base := strings.TrimSuffix(matches[i], checkpoint.JsonNameSuffix)
		why := checkpointProblem(base)
		if why == "" {
			break
		}
		if reason == "" {
			reason = why
		}
		names = append([]string{filepath.Base(base)}, names...)
	}
	return names, reason, nil
}

// checkpointProblem says what is wrong with the checkpoint files base.json and base.bin, or "".
func checkpointProblem(base string) string {
	data, err := os.ReadFile(base + checkpoint.JsonNameSuffix)
	if err != nil {
		return err.Error()
	}
	if len(data) == 0 {
		return "its .json is empty"
	}
	var meta struct {
		Variables []json.RawMessage `json:"Variables"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return "its .json does not parse: " + err.Error()
	}
	if meta.Variables == nil {
		return "its .json lists no variables"
	}
	if _, err := os.Stat(base + checkpoint.BinDataSuffix); err != nil {
		return "its .bin is missing"
	}
	return ""
}

// setAsideIncompleteCheckpoints renames the incomplete newest checkpoints of dir (see
// incompleteCheckpoints) to NAME.json.incomplete and NAME.bin.incomplete, so that GoMLX loads the
// newest complete one. It returns the base names it moved.
func setAsideIncompleteCheckpoints(dir string) ([]string, error) {
	names, _, err := incompleteCheckpoints(dir)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	for _, name := range names {
		for _, suffix := range []string{checkpoint.JsonNameSuffix, checkpoint.BinDataSuffix} {
			from := filepath.Join(dir, name+suffix)
			if err := os.Rename(from, from+incompleteCheckpointSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("training: setting aside the incomplete checkpoint %s: %w", from, err)
			}
		}
	}
	return names, nil
}
