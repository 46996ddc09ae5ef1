package training

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// Store parameters under which a checkpoint records the run that wrote it (GoMLX's checkpoint
// package saves the Store's parameters in its JSON file): the settings format and the
// settings as JSON; the model's architecture too, which says that cifarlib wrote it (format 1
// has it as well). GoMLX's own optimizer and learning_rate parameters are kept as GoMLX reads them.
const (
	ckptParamFormat   = "cifarlab_format"
	ckptParamSettings = "cifarlab_settings"
	ckptParamModel    = "cifarlab_model"
)

// ErrNoCheckpoint is returned (wrapped) when a directory holds no checkpoint to load.
var ErrNoCheckpoint = errors.New("training: no checkpoint")

// CheckpointInfo is what a checkpoint records about the run that saved it: its Settings,
// resolved (Model.Head is the head's width, Run.Steps its target step), at Step. An imported
// run's (WriteImportedRun) are its dataset and model only: no optimizer.
type CheckpointInfo struct {
	// Dir is the checkpoint directory.
	Dir string
	// Step is the global step of the latest checkpoint.
	Step int
	// Format is the settings format it was written in: SettingsFormat, or 1 for a run of the
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

// setStoreParams records info in the Store's parameters, which the checkpoint saves.
func (ci *CheckpointInfo) setStoreParams(store *model.Store) error {
	settings, err := ci.Settings.MarshalJSON()
	if err != nil {
		return fmt.Errorf("training: recording the run's settings: %w", err)
	}
	root := store.RootScope()
	root.SetParams(map[string]any{ckptParamFormat: SettingsFormat, ckptParamSettings: string(settings), ckptParamModel: ci.Model.Arch})
	if ci.Optimizer != nil {
		root.SetParams(map[string]any{optimizer.ParamOptimizer: ci.Optimizer.Algorithm(), optimizer.ParamLearningRate: learningRate(ci.Optimizer)})
	}
	setInputParams(store, ci.Input)
	if ci.ImportedFrom != "" {
		root.SetParams(map[string]any{ckptParamImported: ci.ImportedFrom})
	}
	return nil
}

// checkpointInfoFromStore reads the parameters a checkpoint of dir restored into store. ok is
// false when the store holds no cifarlib run parameters (an empty directory, or a foreign
// checkpoint); a format newer than SettingsFormat is a *runs.FormatError.
func checkpointInfoFromStore(store *model.Store, dir string) (info CheckpointInfo, ok bool, err error) {
	root := store.RootScope()
	if _, found := root.GetParam(ckptParamModel); !found {
		return info, false, nil
	}
	info = CheckpointInfo{Dir: dir, Format: model.GetParamOr(root, ckptParamFormat, 1)}
	switch {
	case info.Format > SettingsFormat:
		return info, true, &runs.FormatError{What: "checkpoint " + dir, Format: info.Format, Lab: SettingsFormat}
	case info.Format == 1:
		info.Settings = settingsV1(root)
	default:
		if err := info.Settings.UnmarshalJSON([]byte(model.GetParamOr(root, ckptParamSettings, ""))); err != nil {
			return info, true, &CorruptCheckpointError{Dir: dir, Err: fmt.Errorf("its settings do not read: %w", err)}
		}
	}
	info.ImportedFrom = model.GetParamOr(root, ckptParamImported, "")
	info.Step = int(optimizer.GetGlobalStep(store))
	return info, true, nil
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
