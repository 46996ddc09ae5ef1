package training

import (
	"fmt"
	"path/filepath"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"
	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/checkpoint"
)

// LoadedCheckpoint is a trained model loaded from a checkpoint directory, ready to evaluate.
type LoadedCheckpoint struct {
	// Info describes the run that saved it.
	Info CheckpointInfo
	// Trained is the model, rebuilt from Info with the model factory (same architecture and
	// head), with the checkpoint's variables in its Store (loaded lazily as the model graph asks
	// for them), on the backend given to LoadCheckpoint.
	*Trained
	// History is the run's History (empty if none was saved).
	History *runs.History

	// file is the checkpoint read (its files are file+".json" and file+".bin"), "" when it was
	// not read from a folder: EvalKey hashes it.
	file string
}

// LoadCheckpoint loads the latest checkpoint in dir, rebuilding its model for backend.
func LoadCheckpoint(dir string, backend compute.Backend) (*LoadedCheckpoint, error) {
	store, h, info, err := readRunCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	if info.Data.Spec.Name == "" {
		return nil, &checkpoints.CorruptError{Dir: dir, Err: fmt.Errorf("it names no dataset")}
	}
	m, err := info.modelBuilder(info.Data.Spec).Backend(backend).Done()
	if err != nil {
		return nil, fmt.Errorf("training: checkpoint %s: rebuilding model %s: %w", dir, info.Model.Arch, err)
	}
	return loadedCheckpoint(store, h, info, m, backend)
}

// modelBuilder starts the run's model (its architecture, head width and input normalisation)
// for spec; the head is
// marked overridden only when it differs from spec's classes.
func (ci *CheckpointInfo) modelBuilder(spec data.Spec) *cifarlib.ModelBuilder {
	b := cifarlib.NewModel(spec, ci.Model.Arch).Input(ci.Input)
	if ci.Model.Head != spec.NumClasses {
		b = b.Head(ci.Model.Head)
	}
	return b
}

// loadedCheckpoint pairs the checkpoint's store with the model m and reads the run's History.
func loadedCheckpoint(store *model.Store, h *checkpoint.Handler, info CheckpointInfo, m *cifarlib.Model, backend compute.Backend) (*LoadedCheckpoint, error) {
	hist, err := runs.LoadHistory(info.Dir)
	if err != nil {
		return nil, err
	}
	ck := &LoadedCheckpoint{Info: info, Trained: &Trained{Model: m, Store: store, Backend: backend}, History: hist}
	if list, err := h.ListCheckpoints(); err == nil && len(list) > 0 { // the latest: the one the handler read
		ck.file = filepath.Join(h.Dir(), list[len(list)-1])
	}
	return ck, nil
}

// LoadCheckpointInto loads the latest checkpoint in dir into the model m, as it is: PyTorch's
// model.load_state_dict(checkpoint), strict. The run must have m's architecture
// (*ArchMismatchError) and head width (*checkpoints.ShapeMismatchError, naming the head variable, both shapes
// and both datasets): a checkpoint is never reshaped to fit; a transfer (Settings.Transfer.From) is
// how a trained run moves to a dataset with another number of classes.
func LoadCheckpointInto(dir string, m *cifarlib.Model, backend compute.Backend) (*LoadedCheckpoint, error) {
	store, h, info, err := readRunCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	if info.Model.Arch != m.Arch {
		return nil, &ArchMismatchError{Dir: dir, Saved: info.Model.Arch, Requested: m.Arch}
	}
	if err := headShapeCheck(h, info, m.Spec.ID(), m.NumClasses, m.Arch, false); err != nil {
		return nil, err
	}
	own := *m // the run's weights expect its own input normalisation
	own.Input = info.Input
	return loadedCheckpoint(store, h, info, &own, backend)
}
