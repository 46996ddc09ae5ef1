package training

import (
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"
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
			name, p.Checkpoint.Dir, name, checkpoints.IncompleteSuffix)
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
	info := CheckpointInfo{Dir: p.Checkpoint.Dir, Format: settingsFormat, Settings: p.Settings, Input: input}
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
	h, setAside, err := checkpoints.Open(store, dir, p.Checkpoint.Keep)
	if err != nil {
		return nil, err
	}
	tc := &trainCheckpoint{handler: h, dir: dir, setAside: setAside}
	has, err := h.HasCheckpoints()
	if err != nil {
		return nil, fmt.Errorf("training: checkpoint directory %s: %w", dir, err)
	}
	if !has {
		return tc, nil
	}
	params, _, err := checkpoints.ReadParams(store) // Open refused a foreign checkpoint
	if err != nil {
		return nil, err
	}
	info, err := checkpointInfo(store, params, dir)
	if err != nil {
		return nil, err
	}
	diffs := info.compareForResume(&p.Settings)
	// A different head is a *checkpoints.ShapeMismatchError, which says more than the settings' diff.
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

// save writes a new checkpoint (keeping the newest Checkpoint.Keep) and the history, but the
// fed hyper-parameters (optimizers.IsFed): each run sets its own.
func (tc *trainCheckpoint) save(store *model.Store, history *runs.History) error {
	return checkpoints.Save(tc.handler, store, history, optimizers.IsFed)
}

// readRunCheckpoint opens the latest checkpoint of the cifarlib run in dir into a new Store
// (checkpoints.Read) and returns what the run recorded, its settings read (checkpointInfo).
func readRunCheckpoint(dir string) (*model.Store, *checkpoint.Handler, CheckpointInfo, error) {
	store, h, params, err := checkpoints.Read(dir)
	if err != nil {
		return nil, nil, CheckpointInfo{}, err
	}
	info, err := checkpointInfo(store, params, dir)
	if err != nil {
		return nil, nil, CheckpointInfo{}, err
	}
	return store, h, info, nil
}

// headShapeCheck returns *checkpoints.ShapeMismatchError when the checkpoint h (of the run info)
// holds a head whose width differs from head, for a model of the same architecture arch built
// for the dataset with Spec ID dataset; nil otherwise.
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
	return &checkpoints.ShapeMismatchError{Dir: info.Dir, Variable: path, Saved: []int{dims[0], dims[1]}, Model: []int{dims[0], head},
		SavedDataset: info.Data.Spec.ID(), ModelDataset: dataset, SavedHead: info.Model.Head, ModelHead: head, Resume: resume}
}
