package training

import (
	"slices"
	"time"

	"github.com/gomlx/gomlx/ml/model"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"
)

// WriteImportedRun writes a run folder for a model whose weights were made outside the lab (a
// PyTorch file, see package interop): store's variables as the run's checkpoint at step 0, the
// run's settings (dataset, architecture, head width, and m.Input: the input normalisation its
// weights expect) in its parameters, an empty history and a
// run.json with status done and ImportedFrom set to source. LoadCheckpoint, DiagnoseRun and
// Settings.Transfer.From (eval, diagnose --from and train --from) then accept it like a run the lab
// trained.
//
// dir must not exist or be empty. The folder is written under a temporary name beside it and
// renamed into place, so on any error nothing is left (checkpoints.WriteRun).
func WriteImportedRun(dir string, m *cifarlib.Model, store *model.Store, source string) error {
	info := CheckpointInfo{Dir: dir, Format: settingsFormat, Input: m.Input, ImportedFrom: source,
		Settings: Settings{Data: DataSettings{Spec: m.Spec}, Model: ModelSettings{Arch: m.Arch, Head: m.NumClasses}}}
	if err := info.setStoreParams(store); err != nil {
		return err
	}
	now := time.Now()
	rec := &runs.Record{Status: runs.RunDone, Started: now, Ended: now, Settings: importedSettings(info.Settings), ImportedFrom: source}
	return checkpoints.WriteRun(dir, store, rec)
}

// importedSettings are the settings run.json records of an imported run: those its weights have
// (the dataset, the model and its head, guarded, on one device); it was trained with no other.
func importedSettings(s Settings) runs.RunSettings {
	s.Compute.Devices = 1
	all := runSettings(&s)
	known := all.Values[:0]
	for _, v := range all.Values {
		if slices.Contains([]string{"dataset", "labels", "model", "head", "guard", "devices"}, v.Name) {
			known = append(known, v)
		}
	}
	return runs.RunSettings{Values: known}
}
