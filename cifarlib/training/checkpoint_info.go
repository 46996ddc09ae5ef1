package training

import (
	"encoding/json"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"

	"github.com/gomlx/gomlx/ml/model"
)

// CheckpointInfo is what a checkpoint records about the run that saved it: its Settings,
// resolved (Model.Head is the head's width, Run.Steps its target step), at Step. An imported
// run's (WriteImportedRun) are its dataset and model only: no optimizer.
type CheckpointInfo struct {
	// Dir is the checkpoint directory.
	Dir string
	// Step is the global step of the latest checkpoint.
	Step int
	// Format is the settings format it was written in: settingsFormat, or 1 for a run of the
	// lab before Settings (checkpoint_v1.go reads those).
	Format int
	// Settings are the run's.
	Settings
	// Input is the normalisation the run's model expects when it is not its dataset's (an
	// imported model's: see cifarlib.InputNormalization); zero otherwise.
	Input cifarlib.InputNormalization
	// ImportedFrom is the file an imported run was made from (WriteImportedRun), or "".
	ImportedFrom string
}

// checkpointInfoJSON is CheckpointInfo in JSON (`cifarlab eval --json`).
type checkpointInfoJSON struct {
	Dir          string                      `json:"dir"`
	Step         int                         `json:"step"`
	Format       int                         `json:"format"`
	Settings     Settings                    `json:"settings"`
	Input        cifarlib.InputNormalization `json:"input_normalization,omitzero"`
	ImportedFrom string                      `json:"imported_from,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (ci CheckpointInfo) MarshalJSON() ([]byte, error) {
	return json.Marshal(checkpointInfoJSON{ci.Dir, ci.Step, ci.Format, ci.Settings, ci.Input, ci.ImportedFrom})
}

// UnmarshalJSON implements json.Unmarshaler.
func (ci *CheckpointInfo) UnmarshalJSON(b []byte) error {
	var j checkpointInfoJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*ci = CheckpointInfo{j.Dir, j.Step, j.Format, j.Settings, j.Input, j.ImportedFrom}
	return nil
}

// setStoreParams records info in the Store's parameters (checkpoints.Params), which the
// checkpoint saves.
func (ci *CheckpointInfo) setStoreParams(store *model.Store) error {
	settings, err := ci.Settings.MarshalJSON()
	if err != nil {
		return fmt.Errorf("training: recording the run's settings: %w", err)
	}
	p := checkpoints.Params{Format: settingsFormat, Settings: string(settings), Arch: ci.Model.Arch, Input: ci.Input, ImportedFrom: ci.ImportedFrom}
	if ci.Optimizer != nil {
		p.Optimizer, p.LearningRate = ci.Optimizer.Algorithm(), learningRate(ci.Optimizer)
	}
	p.Set(store)
	return nil
}

// checkpointInfo is what the checkpoint of dir, read into store, recorded of its run (params):
// its settings, from their JSON or (format 1) from the store's parameters of each; a format
// newer than settingsFormat is a *runs.FormatError, settings that do not read a
// *checkpoints.CorruptError.
func checkpointInfo(store *model.Store, params checkpoints.Params, dir string) (CheckpointInfo, error) {
	info := CheckpointInfo{Dir: dir, Format: params.Format, Step: params.Step, Input: params.Input, ImportedFrom: params.ImportedFrom}
	switch {
	case info.Format > settingsFormat:
		return info, &runs.FormatError{What: "checkpoint " + dir, Format: info.Format, Lab: settingsFormat}
	case info.Format == 1:
		info.Settings = settingsV1(store.RootScope(), params.Arch)
	default:
		if err := info.Settings.UnmarshalJSON([]byte(params.Settings)); err != nil {
			return info, &checkpoints.CorruptError{Dir: dir, Err: fmt.Errorf("its settings do not read: %w", err)}
		}
	}
	return info, nil
}

// compareForResume lists the settings of requested that differ from the saved ones, those a
// resumed run must keep (each Field's resume rule): the data order, the model and the
// optimisation. The guard may change freely; the run's steps matter to the schedules and to
// lookahead, which span them.
func (ci *CheckpointInfo) compareForResume(requested *Settings) []string {
	var diffs []string
	add := func(name, saved, requested string) {
		if saved != requested {
			diffs = append(diffs, fmt.Sprintf("%s: saved %s, requested %s", name, saved, requested))
		}
	}
	saved := &ci.Settings
	for _, f := range fields {
		if f.resume != nil && f.resume(saved, requested) {
			add(f.Label, f.Get(saved), f.Get(requested))
		}
		if f.Name != "steps" {
			continue
		}
		if saved.Schedule.Name == optimizers.ScheduleCosine {
			add("steps (the cosine schedule spans them)", f.Get(saved), f.Get(requested))
		}
		if saved.Schedule.Name == optimizers.ScheduleTriangle || saved.Run.Lookahead {
			add("steps (the triangle schedule and lookahead span them)", f.Get(saved), f.Get(requested))
		}
	}
	return diffs
}
