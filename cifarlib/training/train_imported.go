package training

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
)

// Training on an imported run (WriteImportedRun): its checkpoint holds the model's weights at
// step 0 and no training settings (no optimizer, batch size, seed or schedule), because the
// file it came from has none the lab can use. `--checkpoint IMPORTED_RUN` then continues from
// those weights, head included, with the settings of the run that trains it: a fresh optimizer
// state (as PyTorch's when a new optimizer is made for a loaded state_dict), the global step
// counting from the import's 0. Its first save records those settings, so from then on the run
// resumes as strictly as any other.

// hasNoTrainingSettings reports whether the checkpoint records no training settings: an
// imported run not trained since (runs imported before ImportedFrom was recorded included).
func (ci *CheckpointInfo) hasNoTrainingSettings() bool {
	return ci.Optimizer == nil && ci.Data.BatchSize == 0 && ci.Step == 0
}

// checkTrainOn refuses to train on an imported run with another model, dataset or head width
// than it was imported with: its weights are for that model only.
func (ci *CheckpointInfo) checkTrainOn(want *Settings) error {
	saved := fmt.Sprintf("%s for %s (head %d)", ci.Model.Arch, ci.Data.Spec.ID(), ci.Model.Head)
	requested := fmt.Sprintf("%s for %s (head %d)", want.Model.Arch, want.Data.Spec.ID(), want.headWidth())
	if saved == requested {
		return nil
	}
	return fmt.Errorf("training: %s is an imported %s; training it on needs the same model and dataset, not %s: "+
		"use model=%s dataset=%s (training.Settings' Model.Arch, Data.Spec), or move it to another dataset with from=%s (Transfer.From)",
		ci.Dir, saved, requested, ci.Model.Arch, ci.Data.Spec.Name, ci.Dir)
}

// noteImported says, in one line, that training continues an imported run (in tc, nil without
// checkpoints) from its weights, with the settings of plan p.
func (tc *trainCheckpoint) noteImported(p *plan, log runLog) {
	if tc == nil || tc.imported == nil {
		return
	}
	info := tc.imported
	from := info.Dir
	if info.ImportedFrom != "" {
		from = fmt.Sprintf("%s (imported from %s)", info.Dir, info.ImportedFrom)
	}
	log("training on %s from its weights, head kept: step 0, a fresh %s optimizer state, batch %d "+
		"(an imported run has no optimizer state or settings to resume)", from, algorithm(p.Optimizer), p.Data.BatchSize)
}

// importedFrom is the file the run in the checkpoint folder was imported from, kept in its
// run.json when it trains on (and on each resume after): "" for a run the lab started.
func (t *Trainer) importedFrom(start int) string {
	if t.ckpt == nil || (t.ckpt.imported == nil && start == 0) {
		return ""
	}
	if prev, err := runs.ReadRecord(t.plan.Checkpoint.Dir); err == nil {
		return prev.ImportedFrom
	}
	return ""
}
