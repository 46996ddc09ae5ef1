package training

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/checkpoint"
	"github.com/gomlx/gomlx/ml/train/optimizer"
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
	return info.setStoreParams(store, p.learningRate)
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

// CheckpointInfo is what a checkpoint records about the run that saved it: its Settings,
// resolved (Model.Head is the head's width, Run.Steps its target step), at Step. An imported
// run's (WriteImportedRun) are its dataset and model only: no optimizer.
type CheckpointInfo struct {
	// Dir is the checkpoint directory.
	Dir string
	// Step is the global step of the latest checkpoint.
	Step int
	// Format is the settings format it was written in: settingsFormat, or 1 for a run of the
	// lab before Settings (settingsV1 reads those).
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
// checkpoint saves, with its optimizer's learning rate lr (GoMLX's own parameter).
func (ci *CheckpointInfo) setStoreParams(store *model.Store, lr float64) error {
	settings, err := ci.Settings.MarshalJSON()
	if err != nil {
		return fmt.Errorf("training: recording the run's settings: %w", err)
	}
	p := checkpoints.Params{Format: settingsFormat, Settings: string(settings), Arch: ci.Model.Arch, Input: ci.Input, ImportedFrom: ci.ImportedFrom}
	if ci.Optimizer != nil {
		p.Optimizer, p.LearningRate = ci.Optimizer.Algorithm(), lr
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

// Format 1: the checkpoints of the lab before Settings (commit 4805295 and earlier) record
// each setting in a Store parameter of its own, the fields a later version added absent from
// older ones (their zero values are what those versions trained with). settingsV1 reads them
// as Settings, as the run that wrote them resolved its Config: a run of format 1 loads,
// evaluates and resumes (testdata/run-v0.28.3, testdata/run-4805295-recipe).
const (
	ckptV1Dataset        = "cifarlab_dataset"
	ckptV1Labels         = "cifarlab_labels"
	ckptV1Head           = "cifarlab_head"
	ckptV1Batch          = "cifarlab_batch_size"
	ckptV1Seed           = "cifarlab_seed"
	ckptV1Augment        = "cifarlab_augment"
	ckptV1Augmentation   = "cifarlab_augmentation"
	ckptV1Schedule       = "cifarlab_schedule"
	ckptV1Steps          = "cifarlab_steps"
	ckptV1Warmup         = "cifarlab_warmup_steps"
	ckptV1MinLR          = "cifarlab_min_learning_rate"
	ckptV1Decay          = "cifarlab_weight_decay"
	ckptV1Unguarded      = "cifarlab_unguarded"
	ckptV1Recipe         = "cifarlab_recipe"
	ckptV1Momentum       = "cifarlab_momentum"
	ckptV1BiasScaler     = "cifarlab_bias_scaler"
	ckptV1WhitenBias     = "cifarlab_whiten_bias_epochs"
	ckptV1LabelSmoothing = "cifarlab_label_smoothing"
	ckptV1Lookahead      = "cifarlab_lookahead"
	ckptV1From           = "cifarlab_transferred_from"
	ckptV1Freeze         = "cifarlab_freeze"
	ckptV1BackboneLR     = "cifarlab_backbone_learning_rate"
)

// settingsV1 reads the settings of a format-1 checkpoint of a model of architecture arch from
// its root scope's parameters. Its optimizer is nil for an imported run (no training settings).
func settingsV1(root *model.Scope, arch string) Settings {
	get := func(key string) string { return model.GetParamOr(root, key, "") }
	spec, _ := data.SpecByName(get(ckptV1Dataset), get(ckptV1Labels))
	augmentation := data.Augmentation(get(ckptV1Augmentation)) // "": the default, crop-flip
	if augmentation == "" {
		augmentation = data.AugmentCropFlip
	}
	s := Settings{Recipe: get(ckptV1Recipe),
		Data: DataSettings{Spec: spec, BatchSize: model.GetParamOr(root, ckptV1Batch, 0), Augment: model.GetParamOr(root, ckptV1Augment, false),
			Augmentation: augmentation},
		Model: ModelSettings{Arch: arch, Head: model.GetParamOr(root, ckptV1Head, 0), Unguarded: model.GetParamOr(root, ckptV1Unguarded, false)},
		Schedule: optimizers.Schedule{Name: get(ckptV1Schedule), WarmupSteps: model.GetParamOr(root, ckptV1Warmup, 0),
			MinLearningRate: model.GetParamOr(root, ckptV1MinLR, 0.0)},
		Run: RunSettings{Steps: model.GetParamOr(root, ckptV1Steps, 0), Seed: model.GetParamOr(root, ckptV1Seed, int64(0)),
			LabelSmoothing: model.GetParamOr(root, ckptV1LabelSmoothing, 0.0), Lookahead: model.GetParamOr(root, ckptV1Lookahead, false)},
		Transfer: TransferSettings{From: get(ckptV1From), Freeze: get(ckptV1Freeze), BackboneLearningRate: model.GetParamOr(root, ckptV1BackboneLR, 0.0)},
		Compute:  ComputeSettings{Precision: cifarlib.PrecisionF32},
	}
	s.Optimizer = optimizerV1(get(optimizer.ParamOptimizer), model.GetParamOr(root, optimizer.ParamLearningRate, 0.0),
		model.GetParamOr(root, ckptV1Decay, 0.0), model.GetParamOr(root, ckptV1Momentum, 0.0), model.GetParamOr(root, ckptV1BiasScaler, 0.0),
		model.GetParamOr(root, ckptV1WhitenBias, 0))
	return s
}

// optimizerV1 is the optimizer a format-1 checkpoint names, with its settings (those its
// algorithm has; the others were zero); nil for none (an imported run) or a name this lab does
// not know.
func optimizerV1(name string, lr, decay, momentum, biasScaler float64, whitenBiasEpochs int) optimizers.Optimizer {
	o, err := optimizers.New(name)
	if err != nil {
		return nil
	}
	for param, v := range map[string]float64{"LearningRate": lr, "WeightDecay": decay, "Momentum": momentum, "BiasScaler": biasScaler,
		"WhitenBiasEpochs": float64(whitenBiasEpochs)} {
		o, _ = optimizers.WithParam(o, param, v)
	}
	return o
}

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
	if err := info.setStoreParams(store, 0); err != nil { // no optimizer
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

// Settings in JSON: how a checkpoint records them (CheckpointInfo, checkpoints.Params), the lab
// process sends them and a sweep keeps its base.

// settingsFormat is the format of Settings in JSON (run.json, a checkpoint, the lab process,
// a sweep): format 1 is that of the runs written before Settings (commit 4805295 and earlier),
// whose checkpoints hold one parameter per setting (settingsV1).
const settingsFormat = 2

// settingsJSON is Settings in JSON: its format, its fields, and its optimizer with the
// algorithm's name.
type settingsJSON struct {
	Format int `json:"format"`
	settingsFields
	Optimizer optimizerJSON `json:"optimizer"`
}

// settingsFields are Settings' fields, without its methods.
type settingsFields Settings

// MarshalJSON implements json.Marshaler.
func (s Settings) MarshalJSON() ([]byte, error) {
	return json.Marshal(settingsJSON{Format: settingsFormat, settingsFields: settingsFields(s), Optimizer: optimizerJSON{s.Optimizer}})
}

// UnmarshalJSON implements json.Unmarshaler. Settings of a format newer than settingsFormat
// are a *runs.FormatError.
func (s *Settings) UnmarshalJSON(b []byte) error {
	var j settingsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Format > settingsFormat {
		return &runs.FormatError{What: "settings", Format: j.Format, Lab: settingsFormat}
	}
	*s = Settings(j.settingsFields)
	s.Optimizer = j.Optimizer.Optimizer
	return nil
}

// GobEncode implements gob.GobEncoder: the settings travel as JSON (the lab process).
func (s Settings) GobEncode() ([]byte, error) { return s.MarshalJSON() }

// GobDecode implements gob.GobDecoder.
func (s *Settings) GobDecode(b []byte) error { return s.UnmarshalJSON(b) }

// String writes the settings as JSON, for logs and errors.
func (s Settings) String() string {
	b, err := s.MarshalJSON()
	if err != nil {
		return fmt.Sprintf("(settings: %v)", err)
	}
	return string(b)
}

// optimizerJSON is an Optimizer in JSON: its settings and its algorithm's name.
type optimizerJSON struct{ optimizers.Optimizer }

// MarshalJSON writes {"algorithm": NAME, SETTINGS...}.
func (o optimizerJSON) MarshalJSON() ([]byte, error) {
	if o.Optimizer == nil {
		return []byte("null"), nil
	}
	fields, err := json.Marshal(o.Optimizer)
	if err != nil {
		return nil, err
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(fields, &m); err != nil {
		return nil, err
	}
	m["algorithm"], _ = json.Marshal(o.Algorithm())
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (o *optimizerJSON) UnmarshalJSON(b []byte) error {
	var head struct {
		Algorithm *string `json:"algorithm"`
	}
	if err := json.Unmarshal(b, &head); err != nil || head.Algorithm == nil {
		o.Optimizer = nil
		return err
	}
	def, err := optimizers.New(*head.Algorithm)
	if err != nil {
		return err
	}
	v := reflect.New(reflect.TypeOf(def))
	if err := json.Unmarshal(b, v.Interface()); err != nil {
		return err
	}
	o.Optimizer = v.Elem().Interface().(optimizers.Optimizer)
	return nil
}
